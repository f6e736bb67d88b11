"""Locks that die with their process, and writes that other processes never see half done
(`write_atomic`, kept here for its callers; see store.objects.private).

`flock` locks belong to an open file description, so they are released by the
kernel when the holder exits or crashes: a lock file left on disk is harmless
and never needs cleaning up. Two threads of one process each open the file
themselves, so they exclude each other too. An exclusive holder writes its pid and
what it is doing (`acting_as`: `rewind restore`) into the file, so a waiter that
gives up can say what is locked, by whom, and what to do.
"""

from __future__ import annotations

import fcntl
import os
import re
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


_activity: list[str] = []  # what this process is doing (acting_as), written with its pid


def acting_as(what: str) -> None:
    """Name what this process does (`rewind restore`): written beside its pid into each
    lock it takes exclusively, for whoever waits for one (one line, 80 characters)."""
    _activity[:] = [" ".join(what.split())[:80]]


def holder(path: Path) -> int | None:
    """The pid that last took `path` exclusively (written by file_lock), if still alive."""
    found = holder_of(path)
    return found[0] if found else None


def holder_of(path: Path) -> tuple[int, str] | None:
    """(pid, what it said it was doing, or "") of the process that last took `path`
    exclusively, if still alive."""
    try:
        pid, _, doing = path.read_text(errors="replace").strip().partition(" ")
        os.kill(int(pid), 0)
        return int(pid), doing
    except (OSError, ValueError):
        return None


_H16 = re.compile(r"[0-9a-f]{16}")
_NAMED = {"store": "the checkpoint store", "gc": "the store's garbage collection",
          "shallow": "the store's history boundary", "writers": "the store's writers",
          "writers-gate": "the store's writers"}


def busy(path: Path, what: str | None = None) -> Busy:
    """The error for a lock not had in time: what is locked (`what`, else named from the
    lock file's name), by which process doing what, and what to do."""
    if what is None:
        base, _, part = path.name.removesuffix(".lock").partition(".")
        what = (f"the {part} of project {base}" if part else f"project {base}") \
            if _H16.fullmatch(base) else _NAMED.get(base, f"the lock {path}")
    found = holder_of(path)
    who = "another process" if found is None else \
        f"process {found[0]} ({found[1]})" if found[1] else f"process {found[0]}"
    return Busy(f"{what} is in use by {who}; nothing was done: try again once that has "
                "finished")


@contextmanager
def file_lock(path: Path, *, shared: bool = False, timeout: float | None = None,
              what: str | None = None) -> Iterator[int]:
    """Hold an flock on `path` (a private file, created if missing, never through a planted
    symlink) for the duration of the block; yields the descriptor that holds it.

    timeout=None waits forever (or as long as `waiting_at_most` allows); otherwise raise
    Busy after `timeout` seconds, saying what is locked (`what`: for people, such as
    "the project /src/app"), by whom and what to do.
    An exclusive holder writes its pid (and what it is doing) into the file, so a waiter
    can say whom it waits for.
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
                        raise busy(path, what) from None
                    time.sleep(0.01)
        if not shared:
            try:
                os.ftruncate(fd, 0)
                doing = f" {_activity[0]}" if _activity else ""
                os.pwrite(fd, f"{os.getpid()}{doing}\n".encode(errors="replace"), 0)
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


__all__ = ["acting_as", "busy", "file_lock", "giving_up_when", "holder", "holder_of", "patience",
           "remove_stale_lock", "waiting_at_most", "write_atomic"]
