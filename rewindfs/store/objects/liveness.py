"""Whether a process is getting anywhere: work done, waits it chose, the stall limit.

A watchdog must tell a process that works from one stuck inside a call that never
returns (a damaged store spinning in libgit2, a read from a hung network filesystem),
without killing one that waits on purpose (for a lock another process holds, for a
person at a prompt or in a pager, for git's gc). So work is counted, and waits are
declared:

    tick()       one unit of work done (the interrupt poll of every long loop calls it)
    ticks()      how many so far; a watchdog compares two readings
    patient()    a block that waits as long as someone else decides: never a stall
    waiting()    whether this process is inside such a block now
    stall_seconds()  how long without progress counts as stuck (REWIND_STALL_SECONDS)

The counters are process-wide and lock-free (a lost increment under a race only
delays a beat); the patience depth is kept under a lock, since a lost update there
would silence the watchdog for good.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "REWIND_STALL_SECONDS"
DEFAULT_STALL_SECONDS = 120.0  # far above any single call on a healthy store

_ticks = 0
_patience = 0
_guard = threading.Lock()


def tick() -> None:
    global _ticks
    _ticks += 1


def ticks() -> int:
    return _ticks


@contextmanager
def patient() -> Iterator[None]:
    """Mark a wait that may last as long as it lasts (see the module docstring)."""
    global _patience
    with _guard:
        _patience += 1
    try:
        yield
    finally:
        with _guard:
            _patience -= 1


def waiting() -> bool:
    return _patience > 0


def stall_seconds() -> float:
    """Seconds without progress after which a command (or the capture's second process)
    counts as stuck; 0 turns the watchdogs off."""
    try:
        return max(0.0, float(os.environ.get(ENV, DEFAULT_STALL_SECONDS)))
    except ValueError:
        return DEFAULT_STALL_SECONDS
