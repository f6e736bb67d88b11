"""Locks that die with their process, and writes that other processes never see half done
(`write_atomic`, kept here for its callers; see store.private).

`flock` locks belong to an open file description, so they are released by the
kernel when the holder exits or crashes: a lock file left on disk is harmless
and never needs cleaning up. Two threads of one process each open the file
themselves, so they exclude each other too.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rewindfs.errors import Busy
from rewindfs.store import private
from rewindfs.store.private import write_atomic


def remove_stale_lock(path: Path, max_age: float) -> bool:
    """Delete a git-style lock file older than `max_age` seconds (left by a killed process).

    Callers pass 0 when they hold the flock that every legitimate writer of that lock
    file also holds, so whatever is there is a dead writer's.
    """
    try:
        if max_age <= 0 or time.time() - path.stat().st_mtime > max_age:
            path.unlink()
            return True
    except FileNotFoundError:
        pass
    return False


@contextmanager
def file_lock(path: Path, *, shared: bool = False, timeout: float | None = None) -> Iterator[None]:
    """Hold an flock on `path` (created if missing) for the duration of the block.

    timeout=None waits forever; otherwise raise Busy after `timeout` seconds.
    """
    fd = private.open_file(path, os.O_RDWR | os.O_CREAT)
    try:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        if timeout is None:
            fcntl.flock(fd, mode)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Busy(f"{path.name} is locked by another process") from None
                    time.sleep(0.01)
        yield
    finally:
        os.close(fd)


__all__ = ["file_lock", "remove_stale_lock", "write_atomic"]
