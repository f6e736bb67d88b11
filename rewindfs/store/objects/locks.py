"""Locks that die with their process, and writes that other processes never see half done
(`write_atomic`, kept here for its callers; see store.objects.private).

`flock` locks belong to an open file description, so they are released by the
kernel when the holder exits or crashes: a lock file left on disk is harmless
and never needs cleaning up. Two threads of one process each open the file
themselves, so they exclude each other too.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from pathlib import Path

from rewindfs.errors import Busy
from rewindfs.store.objects import liveness, private
from rewindfs.store.objects.private import write_atomic


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


# While a lock is held by someone else, `notice(lock path, holder pid or None)` is
# entered around the wait (the CLI shows "waiting for process 1234 ..." on a terminal).
_waits: ContextVar[Callable[[Path, int | None], AbstractContextManager[object]] | None] = \
    ContextVar("lock_waits", default=None)


# Within `waiting_at_most(seconds)`, a lock that would be waited for without end is waited
# for that long at most, then Busy: a caller that must answer (an MCP tool call) never hangs
# behind another process's long restore.
_patience: ContextVar[float | None] = ContextVar("lock_patience", default=None)

# Within `giving_up_when(event)`, a lock another process holds is waited for until `event`
# is set, then Busy: a thread of `rewind ui` that quits never waits for another process
# (a thread cannot be interrupted by a signal, so the wait polls instead).
_give_up: ContextVar[threading.Event | None] = ContextVar("lock_give_up", default=None)
GIVE_UP_POLL = 0.05  # seconds between tries of a lock a waiter may give up


@contextmanager
def waiting_at_most(seconds: float | None) -> Iterator[None]:
    """None: wait without end again (inside a block that must not be cut short, which
    gives up no wait either: see giving_up_when)."""
    token = _patience.set(None if seconds is None else max(0.0, seconds))
    given = _give_up.set(None) if seconds is None else None
    try:
        yield
    finally:
        if given is not None:
            _give_up.reset(given)
        _patience.reset(token)


@contextmanager
def giving_up_when(event: threading.Event) -> Iterator[None]:
    """A lock waited for without end inside the block is given up (Busy) once `event`
    is set; a block that holds its locks (waiting_at_most(None)) finishes as it would."""
    token = _give_up.set(event)
    try:
        yield
    finally:
        _give_up.reset(token)


def patience() -> float | None:
    """How long a lock may be waited for here (None: without end)."""
    return _patience.get()


@contextmanager
def reporting_waits(notice: Callable[[Path, int | None], AbstractContextManager[object]]
                    ) -> Iterator[None]:
    token = _waits.set(notice)
    try:
        yield
    finally:
        _waits.reset(token)


def holder(path: Path) -> int | None:
    """The pid that last took `path` exclusively (written by file_lock), if still alive."""
    try:
        pid = int(path.read_text().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def file_lock(path: Path, *, shared: bool = False, timeout: float | None = None) -> Iterator[int]:
    """Hold an flock on `path` (a private file, created if missing, never through a planted
    symlink) for the duration of the block; yields the descriptor that holds it.

    timeout=None waits forever (or as long as `waiting_at_most` allows); otherwise raise
    Busy after `timeout` seconds.
    An exclusive holder writes its pid into the file, so a waiter can say whom it
    waits for.
    """
    if timeout is None:
        timeout = _patience.get()
    fd = private.open_file(path, os.O_RDWR | os.O_CREAT)
    try:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        if timeout is None:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                notice = _waits.get()
                with notice(path, holder(path)) if notice else nullcontext(), \
                        liveness.patient():  # another process decides how long
                    _wait_for(fd, mode, path)
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
        if not shared:
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except OSError:
                pass  # only informative
        yield fd
    finally:
        os.close(fd)


def _wait_for(fd: int, mode: int, path: Path) -> None:
    """flock(fd, mode), as long as it takes, or until the waiter gives up (Busy)."""
    event = _give_up.get()
    if event is None:
        fcntl.flock(fd, mode)
        return
    while not event.wait(GIVE_UP_POLL):
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue
    raise Busy(f"gave up waiting for {path.name}, which another process holds")


__all__ = ["file_lock", "giving_up_when", "patience", "remove_stale_lock", "waiting_at_most",
           "write_atomic"]
