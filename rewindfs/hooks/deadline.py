"""Bounds in time for the hook's own work: a classification, a wait for a lock.

The hook runs before every tool call, and what it works on comes from outside (the
agent's payload, a lock another hook holds), so nothing in it may take unbounded time.
A thread cannot interrupt Python code, but a timer signal can: `within(seconds)` arms
SIGALRM for the block and turns its expiry into `TimeUp` raised in the block (pure
Python work and a blocking flock alike). Only the main thread gets signals; elsewhere
the block runs unbounded and the caller's own deadline (hooks.entry's) is the bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

try:   # the C module alone: `signal` builds its enums on import, ~0.5 ms of every hook
    import _signal as signal
except ImportError:  # pragma: no cover - not CPython
    import signal  # type: ignore[no-redef]


class TimeUp(Exception):
    """The block did not finish in the time it was given."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    def expired(_signum, _frame) -> None:
        raise TimeUp(f"not done within {seconds:g}s")

    try:
        previous = signal.signal(signal.SIGALRM, expired)
    except ValueError:  # not the main thread (signals are the main thread's): unbounded
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def flock(fd: int, seconds: float) -> None:
    """An exclusive flock on `fd`, waited for at most `seconds` (TimeUp past them)."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    with within(seconds):
        fcntl.flock(fd, fcntl.LOCK_EX)
