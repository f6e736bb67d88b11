"""Turning user-given paths into safe project-relative paths."""

from __future__ import annotations

import os
from pathlib import Path

from rewindfs.errors import InvalidInput


def project_relative(path: str, workdir: Path, *, cwd: Path | None = None) -> bytes:
    """`path` as bytes relative to `workdir`; b"" means the whole project.

    With `cwd` (the CLI), a relative path is taken relative to the current
    directory and an absolute path inside the project is accepted. Without it
    (the API), absolute paths are rejected. `..` may never leave the project.
    Symlinks are not resolved: the path names an entry, not what it points at.
    """
    if not path or not path.strip():
        raise InvalidInput("empty path")
    if "\0" in path:
        raise InvalidInput("path contains a NUL byte")
    if os.path.isabs(path) and cwd is None:
        raise InvalidInput(f"path must be relative to the project, got absolute path {path!r}")
    base = cwd if cwd is not None else workdir
    joined = os.path.normpath(os.path.join(str(base), path))
    root = os.path.normpath(str(workdir))
    if joined == root:
        return b""
    if not joined.startswith(root.rstrip("/") + "/"):
        raise InvalidInput(f"path {path!r} escapes the project directory {workdir}")
    rel = joined[len(root.rstrip("/")) + 1 :]
    if rel.split("/")[0] == ".git":
        raise InvalidInput(f"{path!r} is inside .git, which is never checkpointed: no "
                           "checkpoint holds it")
    return os.fsencode(rel)


def in_scope(path: bytes, scope: list[bytes] | None) -> bool:
    """Whether `path` is a scope entry, lies below one, or is an ancestor of one (a file
    or link standing where the checkpoint has a directory must go for the entry to return)."""
    if not scope:
        return True
    return any(not s or path == s or path.startswith(s + b"/") or s.startswith(path + b"/")
               for s in scope)
