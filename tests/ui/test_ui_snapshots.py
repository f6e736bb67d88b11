"""`rewind ui`'s screens at 80x24 and 120x40, as text, against the snapshots in
snapshots/ (the demo project of scripts/uidemo.py: the same ids, times and bytes every
run; the clock fixed; the temporary path written `<project>`). Text rather than textual's
SVG: a snapshot a person can read in a diff, which no colour theme or font change moves.

REWIND_UPDATE_SNAPSHOTS=1 writes them anew (then read the diff before committing it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from uihelp import make_app, pilot_test, project_path, screen_text, settle, uidemo

HERE = Path(__file__).parent / "snapshots"
SIZES = [(80, 24), (120, 40)]
UPDATE = os.environ.get("REWIND_UPDATE_SNAPSHOTS") == "1"  # (read before the fixtures clear it)
# screen name -> the keys that reach it from the start
SCREENS = {
    "timeline": [],
    "files": ["enter", "j"],
    "confirm-restore": ["enter", "j", "r"],
    "whole-file": ["enter", "d"],
    "step": ["j", "s"],
    "search": ["slash", *"ship", "enter"],
    "help": ["question_mark"],
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", sorted(SCREENS))
@pilot_test
async def test_screen(demo, screen, size):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in SCREENS[screen]:
            await pilot.press(key)
            await settle(pilot)
        shown = project_path(screen_text(app), workdir) + "\n"
    path = HERE / f"{screen}-{size[0]}x{size[1]}.txt"
    if UPDATE:
        path.write_text(shown)
    assert path.exists(), f"no snapshot {path.name}: REWIND_UPDATE_SNAPSHOTS=1 writes it"
    assert shown == path.read_text(), f"{path.name} differs (REWIND_UPDATE_SNAPSHOTS=1 " \
        "rewrites it)"
