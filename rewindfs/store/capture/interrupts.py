"""Ctrl-C during work that runs inside libgit2 callbacks, or must not stop half way.

Python raises KeyboardInterrupt at the next bytecode after SIGINT. When that is the
first line of a cffi callback (libgit2's add_all calls back into Python for every
path), cffi can only print "Exception ignored from cffi callback" and return a
default: the interrupt is lost and the walk goes on. Inside `deferred()` the signal
is only noted; long loops and callbacks poll `requested()` and wind down cleanly
(returning an error code to libgit2, deleting unfinished files), and the interrupt
is delivered through the previous handler when the block ends.

Signal handlers belong to the main thread: elsewhere `deferred()` changes nothing,
and `requested()` stays False (no SIGINT is ever delivered to other threads). Work
on another thread is stopped through a `Work` token instead (`cancellable`): the
same polls raise Interrupted once it is cancelled, and count the work they see,
which is what a caller waiting on that thread watches (agent.bounded).

Every poll is a unit of work for the watchdogs (store.objects.liveness), except
`poll()`, for loops that only wait.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rewindfs.store.objects import liveness

_pending: list[tuple[int, object]] = []
_depth = 0
_work = threading.local()


class Work:
    """A piece of work on a thread of its own: how far it got, and a way to stop it."""

    def __init__(self) -> None:
        self.ticks = 0
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


@contextmanager
def cancellable(work: Work) -> Iterator[Work]:
    """Polls on this thread count into `work` and raise Interrupted once it is cancelled."""
    previous = getattr(_work, "current", None)
    _work.current = work
    try:
        yield work
    finally:
        _work.current = previous


def requested() -> bool:
    """Whether an interrupt arrived inside the current `deferred()` block."""
    return bool(_pending)


class Interrupted(Exception):
    """Raised by work that noticed `requested()`; `deferred()` turns it into the signal."""


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT until the block ends, then deliver it to the previous handler."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN, SIG_DFL or a handler set from C: not ours to wrap
        yield
        return
    if _depth == 0:
        _pending.clear()
    signal.signal(signal.SIGINT, _note)
    _depth += 1
    aborted = False
    try:
        yield
    except Interrupted:
        if not _pending or _depth > 1:
            raise  # not ours to swallow: a bug, or an outer block unwinds further
        aborted = True
    finally:
        _depth -= 1
        signal.signal(signal.SIGINT, previous)
        if _depth == 0 and _pending:
            signum, frame = _pending[0]
            _pending.clear()
            previous(signum, frame)  # the default handler raises KeyboardInterrupt
            if aborted:
                raise KeyboardInterrupt  # the work stopped: never carry on as if done


def _note(signum: int, frame: object) -> None:
    _pending.append((signum, frame))


def check() -> None:
    """Raise Interrupted when an interrupt is waiting (a poll point in a long loop); one
    unit of work done."""
    liveness.tick()
    work = getattr(_work, "current", None)
    if work is not None:
        work.ticks += 1
    poll()


def poll() -> None:
    """`check` for a loop that waits rather than works: counts nothing."""
    if _pending:
        raise Interrupted
    work = getattr(_work, "current", None)
    if work is not None and work.cancelled:
        raise Interrupted
