"""Whether a checkpoint could write the store now: tried, not guessed from modes (`rewind
doctor`). A checkpoint writes objects (a temporary file renamed into place), moves a ref
(a lock file renamed), takes a lock (flock on a file in `locks/`) and rewrites its project's
index in `worktrees/`; so the probe does each of those in the folder where a checkpoint
does it, and removes what it wrote. A store not made yet is tried where the first
checkpoint makes it. Free bytes and inodes come from statvfs.

The verdict names the folder, what failed (the system's own words), and the one fix: the
owner's `chmod`, another owner's `chown`, a read-only filesystem's remount, space or
inodes freed.
"""

from __future__ import annotations

import errno
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

# Where a checkpoint writes, below the store (the store itself when it lacks one: the
# checkpoint then makes it there)
PLACES = ("objects", "refs/hermes", "locks", "worktrees")
PROBE = ".rewind-doctor-probe"


@dataclass
class Verdict:
    ok: bool
    detail: str = ""      # what failed, or what was tried
    fix: str | None = None
    free_bytes: int = 0
    free_inodes: int | None = None   # None: the filesystem does not count them


def try_store(store: Path) -> Verdict:
    """What trying a checkpoint's writes in `store` (the bare repository) found."""
    existing = store
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        vfs = os.statvfs(existing)
    except OSError as exc:
        return Verdict(False, f"{existing}: {exc.strerror}")
    free = vfs.f_bavail * vfs.f_frsize
    inodes = vfs.f_favail if vfs.f_files else None
    folders = [_place(store, p) for p in PLACES] if existing == store else [existing]
    for folder in dict.fromkeys(folders):
        failed = _try_in(folder)
        if failed is not None:
            verdict = _explain(folder, failed, store, inodes)
            verdict.free_bytes, verdict.free_inodes = free, inodes
            return verdict
    return Verdict(True, "a write, rename and lock worked", None, free, inodes)


def _place(store: Path, rel: str) -> Path:
    """The folder of `rel` a checkpoint writes in, or the nearest one above it it makes it in."""
    path = store / rel
    while not path.is_dir() and path != store:
        path = path.parent
    return path


def _try_in(folder: Path) -> OSError | None:
    """Write, fsync, rename, flock and remove a file in `folder`; the first error."""
    first, second = folder / f"{PROBE}-{os.getpid()}", folder / f"{PROBE}-{os.getpid()}.done"
    fd = -1
    try:
        fd = os.open(first, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
        os.write(fd, b"\0" * 4096)
        os.fsync(fd)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(first, second)
        return None
    except OSError as exc:
        return exc
    finally:
        if fd >= 0:
            os.close(fd)
        for name in (first, second):
            try:
                os.unlink(name)
            except OSError:
                pass


def _explain(folder: Path, exc: OSError, store: Path, inodes: int | None) -> Verdict:
    said = f"{folder}: a checkpoint cannot write there ({exc.strerror})"
    if exc.errno in (errno.EACCES, errno.EPERM):
        try:
            owner = os.stat(folder).st_uid
        except OSError:
            owner = os.geteuid()
        if owner != os.geteuid():
            return Verdict(False, said, f"sudo chown -R {os.geteuid()} {store}")
        return Verdict(False, said, f"chmod -R u+w {store}")
    if exc.errno == errno.EROFS:
        return Verdict(False, f"{said}: its filesystem is mounted read-only",
                       "remount it read-write, or set HERMES_HOME to a folder you can write")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        if inodes == 0:
            return Verdict(False, f"{said}: no free inodes on its filesystem",
                           "delete files there (rewind prune drops old checkpoints)")
        return Verdict(False, said, "rewind prune (or free space)")
    return Verdict(False, said)
