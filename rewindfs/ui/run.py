"""`rewind ui` started: the project's newest checkpoints (what the first screen shows) read
by a child process while textual is imported (rewindfs.ui.early), then the app run on the
terminal, and ended as ui.lifecycle says."""

from __future__ import annotations

import shutil
import sys
from typing import TYPE_CHECKING

from rewindfs.errors import Refused, RewindError

if TYPE_CHECKING:
    from rewindfs.cli.app import App
    from rewindfs.cli.target import Target


def run(app: App, target: Target) -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty()):
        raise Refused("rewind ui needs a terminal (for a script: rewind list, diff, restore)")
    from rewindfs.ui.early import Early
    from rewindfs.ui.source import Source

    source = Source(app, target)
    # No more rows before the first paint than the terminal has lines (the rest follow)
    source.first_screen = max(1, min(source.first_screen, shutil.get_terminal_size().lines))
    early = Early(app, source)  # the first rows read on the other core, meanwhile:
    from rewindfs.ui.app import RewindApp  # textual's import

    found = early.result()
    if found is None:
        found = _read(app, source)
    from rewindfs.ui import lifecycle

    lifecycle.run(RewindApp(source, found[0], error=found[1]))


def _read(app: App, source) -> tuple[list, str | None]:
    try:
        return source.open(), None
    except RewindError as exc:  # shown in place, in the timeline
        from rewindfs.cli.failure import describe

        return [], (describe(app, exc) or (str(exc), 1))[0]
