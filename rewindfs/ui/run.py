"""`rewind ui` started: the project's newest checkpoints read first (what the first screen
shows), then textual imported and the app run on the terminal."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rewindfs.errors import Refused, RewindError

if TYPE_CHECKING:
    from rewindfs.cli.app import App
    from rewindfs.cli.target import Target


def run(app: App, target: Target) -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty()):
        raise Refused("rewind ui needs a terminal (for a script: rewind list, diff, restore)")
    from rewindfs.ui.source import Source

    source = Source(app, target)
    first, error = [], None
    try:
        first = source.open()
    except RewindError as exc:  # shown in place, in the timeline
        from rewindfs.cli.failure import describe

        error = (describe(app, exc) or (str(exc), 1))[0]
    from rewindfs.ui.app import RewindApp

    RewindApp(source, first, error=error).run()
