"""Running `rewind ui`'s app under textual's headless pilot: a project's app, waiting until
its workers are done (never a sleep), and the screen as text."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))  # uidemo: the project the screens are taken of
import uidemo  # noqa: E402,F401 - offered to the tests from here

DEADLINE = 60.0  # seconds a test waits for the app to settle (only a hang meets it)


def make_app(home: Path, workdir: Path, *, clock=None, live: float | None = None):
    """The app `rewind ui -C workdir` runs, its first screen's rows read as the command
    reads them."""
    from rewindfs.cli.app import App
    from rewindfs.cli.target import resolve
    from rewindfs.ui.app import RewindApp
    from rewindfs.ui.source import Source

    app = App(str(home), "never", False)
    source = Source(app, resolve(app, str(workdir)))
    error = None
    try:
        first = source.open()
    except Exception as exc:  # noqa: BLE001 - what the command shows in place
        from rewindfs.cli.failure import describe

        first, error = [], describe(app, exc)[0]
    return RewindApp(source, first, clock=clock or time.time, live=live, error=error)


async def settle(pilot, deadline: float = DEADLINE) -> None:
    """Until no worker runs and every message is handled."""
    end = time.monotonic() + deadline
    app = pilot.app
    while True:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in app.workers):
            return
        assert time.monotonic() < end, "the app never settled"


async def wait_for(pilot, check, deadline: float = DEADLINE) -> None:
    """Until `check()` holds (something the app does by itself: a live refresh)."""
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, "timed out waiting"
        await pilot.pause(0.05)


def screen_text(app) -> str:
    """The screen as a person reads it: its characters, no colours."""
    from rich.console import Console

    console = Console(width=app.size.width, height=app.size.height, file=io.StringIO(),
                      force_terminal=True, color_system=None, record=True,
                      legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True,
                                                       screen_stack=app._background_screens))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


def status(app) -> str:
    return str(app.query_one("#status").render())


def project_path(text: str, workdir: Path) -> str:
    """The screen with the test's temporary path as `<project>` (snapshots hold it so),
    the title line's too, however much of the path it had room for."""
    lines = text.replace(os.fspath(workdir), "<project>").split("\n")
    if lines and lines[0].startswith(" rewind ui  "):
        lines[0] = " rewind ui  <project>"
    return "\n".join(lines)


def pilot_test(fn):
    """An async test run to its end on a fresh event loop (no pytest plugin needed)."""
    import asyncio
    import functools

    @functools.wraps(fn)
    def run(*args, **kwargs):
        asyncio.run(fn(*args, **kwargs))

    return run

