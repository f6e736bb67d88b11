"""What of a project's `.git` is recorded at most, and which ones are refused, in one line each.

The repository is the project's, so it is untrusted like the rest of the tree: its size,
its ref count, the files copied from it and the time its first copy may take are all
bounded, and a `.git` that is not an ordinary repository directory is refused with what
it is (a linked worktree's `.git` file, a symlink, a shallow or partial clone, one that
borrows objects from another repository, one over the size bound). Submodules' own
repositories (`.git/modules`) are not recorded; that is said, and the rest is.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

MiB = 1024 * 1024


@dataclass(frozen=True)
class Bounds:
    max_bytes: int = 2048 * MiB  # of the repository's objects (packs and loose)
    seconds: float | None = 300.0  # a copy of its objects (None: no limit)
    max_refs: int = 50_000
    max_stashes: int = 10_000
    max_index: int = 256 * MiB
    max_file: int = 1 * MiB  # config, description, info/exclude, a hook
    max_hooks: int = 64


DEFAULT = Bounds()


class Refusal(Exception):
    """This repository is not recorded: why, in one line."""


def inspect(gitdir: Path, bounds: Bounds) -> list[str]:
    """Refusal (why) when the repository at `gitdir` is not to be recorded; else what of
    it is left out (said, not refused)."""
    try:
        st = os.lstat(gitdir)
    except OSError as exc:
        raise Refusal(f"{gitdir} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise Refusal(f"{gitdir} is a symbolic link: the repository it points to is not "
                      "recorded")
    if stat.S_ISREG(st.st_mode):
        raise Refusal(f"{gitdir} is a file (a linked worktree or a submodule's checkout): "
                      "its repository is not recorded; checkpoint the repository's own "
                      "directory for that")
    if not stat.S_ISDIR(st.st_mode):
        raise Refusal(f"{gitdir} is not a directory: not recorded")
    for name, what in (("commondir", "a linked worktree's administrative directory"),
                       ("shallow", "a shallow clone: its history stops short (`git fetch "
                                   "--unshallow` first)"),
                       ("objects/info/alternates", "borrowing objects from another "
                                                   "repository (objects/info/alternates)")):
        if os.path.lexists(gitdir / name):
            raise Refusal(f"the repository in {gitdir} is {what}: not recorded")
    size, promisor = objects_size(gitdir / "objects")
    if promisor:
        raise Refusal(f"the repository in {gitdir} is a partial clone (objects it lacks "
                      "are on its promisor remote): not recorded")
    if size > bounds.max_bytes:
        raise Refusal(f"the repository in {gitdir} holds {size / MiB:,.0f} MiB of objects, "
                      f"over max_git_size_mb ({bounds.max_bytes // MiB:,}): not recorded")
    left_out = []
    if os.path.isdir(gitdir / "modules"):
        left_out.append("its submodules' own repositories (.git/modules) are not recorded")
    return left_out


def objects_size(objects: Path) -> tuple[int, bool]:
    """(bytes of packs and loose objects, whether a pack is a promisor's)."""
    total, promisor = 0, False
    try:
        with os.scandir(objects) as top:
            dirs = [e for e in top if e.is_dir(follow_symlinks=False)
                    and (e.name == "pack" or len(e.name) == 2)]
    except OSError:
        return 0, False
    for folder in dirs:
        try:
            with os.scandir(folder.path) as entries:
                for entry in entries:
                    if entry.name.endswith(".promisor"):
                        promisor = True
                    if entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total, promisor


def read_small(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes (never through a symlink: nothing outside `.git` is copied
    into the store), or None when it is absent, something else, or over `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)
