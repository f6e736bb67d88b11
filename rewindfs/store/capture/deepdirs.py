"""Directories nested deeper than libgit2's walk goes (it refuses to enter a directory
100 levels down, and fails the whole walk): found, remembered per project, and left
out of later walks with literal ignore rules, so the rest of the tree is captured."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from rewindfs.store.objects.locks import write_atomic

MAX_DEPTH = 100  # libgit2's FILESYSTEM_MAX_DEPTH
FILE = "too-deep"  # in a project's worktree admin dir: one ignore rule a line


def child_dirs(root: bytes, rel: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(relative path, absolute path) of each real directory (not a symlink, not .git)
    directly in `rel` below `root`; nothing when it cannot be listed."""
    try:
        entries = os.scandir(root + b"/" + rel if rel else root)
    except OSError:
        return
    with entries:
        for entry in entries:
            if entry.name != b".git" and entry.is_dir(follow_symlinks=False):
                yield (rel + b"/" + entry.name if rel else entry.name), entry.path


def find(root: bytes, ignored: Callable[[bytes], bool]) -> list[bytes]:
    """Directories MAX_DEPTH levels below `root`, outside ignored ones (`ignored` takes
    a relative path ending with "/")."""
    out: list[bytes] = []
    stack: list[tuple[bytes, int]] = [(b"", 0)]
    while stack:
        rel, depth = stack.pop()
        for child, _path in child_dirs(root, rel):
            if ignored(child + b"/"):
                continue
            if depth + 1 >= MAX_DEPTH:
                out.append(child)
            else:
                stack.append((child, depth + 1))
    return sorted(out)


def remember(admin: Path, dirs: list[bytes]) -> list[bytes]:
    """Add `dirs` to the project's rules; returns all its rules."""
    known = rules(admin)
    new = [r for r in map(literal_rule, dirs) if r is not None and r not in known]
    everything = known + new
    write_atomic(admin / FILE, os.fsdecode(b"".join(r + b"\n" for r in everything)),
                 errors="surrogateescape")
    return everything


def rules(admin: Path) -> list[bytes]:
    try:
        return [line for line in (admin / FILE).read_bytes().splitlines()
                if line.startswith(b"/")]
    except FileNotFoundError:
        return []


def still_there(admin: Path, root: bytes) -> list[bytes]:
    """The remembered directories that still exist (to report them again)."""
    out = []
    for rule in rules(admin):
        rel = _unescape(rule[1:-1])
        try:
            if stat.S_ISDIR(os.lstat(root + b"/" + rel).st_mode):
                out.append(rel)
        except OSError:
            continue
    return out


def literal_rule(rel: bytes) -> bytes | None:
    """An ignore rule matching exactly the directory `rel` (None if none can: a newline)."""
    if b"\n" in rel or b"\r" in rel:
        return None
    out = bytearray(b"/")
    for byte in rel:
        if byte in b"\\*?[]!# ":
            out.append(0x5C)
        out.append(byte)
    return bytes(out) + b"/"


def _unescape(pattern: bytes) -> bytes:
    out = bytearray()
    escaped = False
    for byte in pattern:
        if byte == 0x5C and not escaped:
            escaped = True
            continue
        escaped = False
        out.append(byte)
    return bytes(out)
