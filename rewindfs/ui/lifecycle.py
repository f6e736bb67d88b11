"""How `rewind ui` ends, whichever way it does, with the terminal as it found it:

* q and ctrl+c quit, ctrl+c in every dialog too (as people expect of a terminal program,
  not textual's "press ctrl+q" hint); with text selected (by the mouse, or in a field)
  ctrl+c copies it instead, textual's rule. SIGTERM and SIGHUP quit the same way, so
  textual puts the terminal back (its own screen, modes, mouse reporting, cursor), and
  then `finish` ends the process by that signal, as it asked. A bug ends it too, with
  textual's traceback and status 1.
* Quitting never waits for another process: the workers' waits for locks are given up
  at once (store.objects.locks.giving_up_when) and their reading stops at its next poll
  (store.capture.interrupts); nothing has changed at that point. A restore already
  carrying out its plan (holding the project) finishes first: it cannot stop half way.

A mixin of ui.app.RewindApp (textual's App).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

ENDING = (signal.SIGTERM, signal.SIGHUP)


class Ending:
    """The ending of ui.app.RewindApp."""

    call_from_thread: Callable[..., Any]
    return_code: int | None

    def start_ending(self) -> None:
        """In the app's __init__: nothing asked it to end yet."""
        self.quitting = threading.Event()
        self.signalled: int | None = None
        self._works: set[Any] = set()
        self._works_guard = threading.Lock()

    def _noted(self, sig: int, _frame: object) -> None:
        self.signalled = self.signalled or sig

    def watch_signals(self) -> None:
        """On mount: SIGTERM and SIGHUP quit as q does (the terminal put back first)."""
        loop = asyncio.get_running_loop()
        for sig in ENDING:
            loop.add_signal_handler(sig, self._ended_by, sig)
        if self.signalled is not None:  # one came while textual started
            self._ended_by(self.signalled)

    def _ended_by(self, sig: int) -> None:
        self.signalled = sig
        self.stop_work()
        self.exit(return_code=128 + sig)

    def exit(self, *args: Any, **kwargs: Any) -> None:
        """textual's App.exit (q, ctrl+c, a signal), every worker told first."""
        self.stop_work()
        super().exit(*args, **kwargs)  # type: ignore[misc] - textual's App, next in line

    def action_copy_or_quit(self) -> None:
        """ctrl+c: copy the text selected (with the mouse, or in a field), as textual
        does; with nothing selected, quit."""
        focused: Any = self.focused  # type: ignore[attr-defined]
        chosen = getattr(focused, "selected_text", None) or \
            self.screen.get_selected_text()  # type: ignore[attr-defined]
        if chosen:
            self.copy_to_clipboard(chosen)  # type: ignore[attr-defined]
        else:
            self.exit()

    def on_unmount(self) -> None:
        """Whatever ended the app (a bug too): no worker waits for anything any more."""
        self.stop_work()

    def stop_work(self) -> None:
        self.quitting.set()
        with self._works_guard:
            for work in self._works:
                work.cancel()

    @contextmanager
    def stoppable(self, reading: bool = True) -> Iterator[None]:
        """Around a worker's work: its waits for another process's lock end once the app
        quits (Busy), and, when it only reads, its reading at its next poll too."""
        from rewindfs.store.capture import interrupts
        from rewindfs.store.objects import locks

        work = interrupts.Work()
        with self._works_guard:
            self._works.add(work)
            if self.quitting.is_set():
                work.cancel()
        try:
            with locks.giving_up_when(self.quitting), \
                    interrupts.cancellable(work) if reading else nullcontext():
                yield
        finally:
            with self._works_guard:
                self._works.discard(work)

    def tell(self, then: Callable[..., Any], *args: Any) -> None:
        """`then(*args)` on the screen's thread, from a worker; nothing once the app is
        ending (the screen is gone, or going)."""
        if self.quitting.is_set():
            return
        try:
            self.call_from_thread(then, *args)
        except (RuntimeError, asyncio.CancelledError):
            pass  # the app ended meanwhile


def run(app: Any) -> None:
    """`app.run()`, SIGTERM and SIGHUP noted from now on (while textual starts), answered
    by the app once it is mounted; then `finish`."""
    for sig in ENDING:
        signal.signal(sig, app._noted)
    try:
        app.run()
    finally:
        for sig in ENDING:  # (the app's own answer is gone with its event loop)
            if signal.getsignal(sig) == app._noted:
                signal.signal(sig, signal.SIG_DFL)
    finish(app)


def finish(app: Ending) -> None:
    """After the app ended and put the terminal back: a signal that ended it ends the
    process as it would have (its parent sees it so); a bug ends it with status 1."""
    if app.signalled is not None:
        signal.signal(app.signalled, signal.SIG_DFL)
        os.kill(os.getpid(), app.signalled)
    if app.return_code:
        raise SystemExit(app.return_code)
