"""Ctrl-C at any moment of a `rewind` command: `rewind: interrupted`, exit status 130, never
a traceback, nothing half written.

Until a command starts its work (start-up: imports, parsing the command line, the quick
answers of cli.quick), nothing has been written, so the handler rewindfs.cli installs as
its first statement ends the process at once (`exit_at_once`): an interrupt that lands
inside an import cannot surface as a traceback from it. While a command runs (`raising`,
entered by the click group around the command), Ctrl-C raises KeyboardInterrupt as
Python's own handler does (but never inside importlib's own code: see
raise_outside_imports), so the work lets go of what it holds (a capture's temp files,
its locks) and cli.failure prints the line.

The interpreter's own start-up, before that first statement (site and its .pth files),
is covered by the launcher, which starts Python with SIGINT blocked (see `install`); run
any other way (`python -m rewindfs.cli`), an interrupt there gets Python's own answer.
This module imports only what the interpreter loaded before any code of ours runs
(`_signal`, `os`, `sys`): importing `signal` runs Python code Ctrl-C could cut short.
"""

import _signal
import os
import sys

EXIT_INTERRUPTED = 130


def exit_at_once(_signum: int = _signal.SIGINT, _frame: object = None) -> None:
    """`rewind: interrupted` and exit 130 now: no cleanup, since nothing was written yet."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # a second Ctrl-C must not cut this short
    try:
        os.write(2, b"rewind: interrupted\n")
    except OSError:
        pass
    os._exit(EXIT_INTERRUPTED)


def install() -> None:
    """From now on Ctrl-C ends the process at once, unless it was ignored when the process
    started (`nohup`, a background job of a script): then it stays ignored.

    The installed `rewind` launcher (its `#!/usr/bin/env -S --block-signal=INT` line,
    written by scripts/setup) starts Python with SIGINT blocked, so a Ctrl-C during the
    interpreter's own start-up waits, pending, until here: unblocked once the handler is
    in place, it ends the process as any other start-up interrupt does."""
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, exit_at_once)
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, (_signal.SIGINT,))


# How soon an interrupt that landed inside an import is tried again (seconds).
RETRY = 0.005


def in_import(frame: object) -> bool:
    """Whether `frame` or a caller of it runs importlib's own code."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):  # type: ignore[attr-defined]
            return True
        frame = frame.f_back  # type: ignore[attr-defined]
    return False


def raise_outside_imports(_signum: int, frame: object) -> None:
    """Ctrl-C during a command's work: KeyboardInterrupt, but never inside importlib's
    own code. Raised there (a module lock's weakref callback, say) it is swallowed with a
    printed traceback, or leaves a module half imported for the next import to trip on;
    so it waits until the import is done (SIGALRM, RETRY seconds on, asks again)."""
    if in_import(frame):
        _signal.setitimer(_signal.ITIMER_REAL, RETRY)
        return
    raise KeyboardInterrupt


def ask_again(_signum: int, frame: object) -> None:
    """SIGALRM: the interrupt held back (inside an import, or lost in a callback) is
    handed to whatever takes Ctrl-C now. That may be a block of work that only notes it
    and winds down at its next poll (store.capture.interrupts.deferred): raised there
    instead, inside one of libgit2's callbacks, it would fail the call with no error
    message ("could not capture ...: no error", seen in a sweep)."""
    current = _signal.getsignal(_signal.SIGINT)
    if callable(current) and current is not raise_outside_imports:
        current(_signal.SIGINT, frame)
        return
    raise_outside_imports(_signal.SIGINT, frame)


class raising:  # noqa: N801 - used as a context manager, like contextlib's
    """Ctrl-C raises KeyboardInterrupt inside the block (the command's work; outside any
    import, see raise_outside_imports), when `install` had taken it over; it ends the
    process at once again after it.

    A KeyboardInterrupt raised where Python cannot pass it on (a weakref callback, an
    at-fork handler such as logging's, a finalizer) would be printed as "Exception
    ignored" with a traceback and lost: inside the block it is raised again RETRY
    seconds on instead, where the work can catch it."""

    def __enter__(self) -> None:
        self.ours = _signal.getsignal(_signal.SIGINT) is exit_at_once
        if self.ours:
            self.alarm = _signal.signal(_signal.SIGALRM, ask_again)
            self.unraisable = sys.unraisablehook
            sys.unraisablehook = self._unraisable
            _signal.signal(_signal.SIGINT, raise_outside_imports)

    def _unraisable(self, unraisable: object) -> None:
        if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
            _signal.setitimer(_signal.ITIMER_REAL, RETRY)
            return
        self.unraisable(unraisable)

    def __exit__(self, *_exc: object) -> None:
        if self.ours:
            _signal.signal(_signal.SIGINT, exit_at_once)
            if sys.unraisablehook == self._unraisable:
                sys.unraisablehook = self.unraisable
            deferred = _signal.setitimer(_signal.ITIMER_REAL, 0)[0] > 0
            _signal.signal(_signal.SIGALRM, self.alarm)
            if deferred:  # the interrupt still waited for an import to finish
                exit_at_once()
