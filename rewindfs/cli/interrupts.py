"""Ctrl-C at any moment of a `rewind` command: `rewind: interrupted`, exit status 130, never
a traceback, nothing half written.

Until a command starts its work (start-up: imports, parsing the command line, the quick
answers of cli.quick), nothing has been written, so the handler rewindfs.cli installs as
its first statement ends the process at once (`exit_at_once`): an interrupt that lands
inside an import cannot surface as a traceback from it. While a command runs (`raising`,
entered by the click group around the command), Ctrl-C raises KeyboardInterrupt as
Python's own handler does, so the work lets go of what it holds (a capture's temp files,
its locks) and cli.failure prints the line.

The interpreter's own start-up, before that first statement (site and its .pth files),
is covered by the launcher, which starts Python with SIGINT blocked (see `install`); run
any other way (`python -m rewindfs.cli`), an interrupt there gets Python's own answer.
This module imports nothing but the C module `_signal` (importing `signal` runs Python
code Ctrl-C could cut short).
"""

import _signal
import os

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


class raising:  # noqa: N801 - used as a context manager, like contextlib's
    """Ctrl-C raises KeyboardInterrupt inside the block (the command's work), when
    `install` had taken it over; it ends the process at once again after it."""

    def __enter__(self) -> None:
        self.ours = _signal.getsignal(_signal.SIGINT) is exit_at_once
        if self.ours:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)

    def __exit__(self, *_exc: object) -> None:
        if self.ours:
            _signal.signal(_signal.SIGINT, exit_at_once)
