"""The screenshots of docs/ui.md: `rewind ui`'s main screens, drawn by textual's own
screenshot (SVG) of the app run headless on the demo project (scripts/uidemo.py: the
same ids, times and bytes every run, the clock fixed), so they stay current:

    scripts/gen_ui_screenshots              # writes docs/ui/*.svg
    scripts/gen_ui_screenshots --out DIR    # elsewhere (tests/docs checks the names)

The project is made under /tmp/rewind-ui-demo/shop (the path the title shows), in a home
of its own: nothing of the person's store is read.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import uidemo  # noqa: E402

SIZE = (120, 32)
# file name -> (the keys that reach the screen from the start, what it shows)
SCREENS = {
    "timeline.svg": ([], "the timeline, the newest checkpoint's files and the first diff"),
    "files.svg": (["enter", "j"], "enter: the files; the deleted notes.md selected"),
    "confirm.svg": (["enter", "j", "r"], "r: the plan (the dry run), then y/n"),
    "restored.svg": (["enter", "j", "r", "y"], "y: notes.md back; the pre-rollback snapshot "
                                               "listed first"),
    "whole-file.svg": (["enter", "d"], "d: the whole file as the checkpoint holds it"),
    "search.svg": (["slash", *"ship", "enter"], "/: file names and text through history"),
    "help.svg": (["question_mark"], "?: every key"),
}


async def shoot(home: Path, workdir: Path, keys: list[str], out: Path) -> None:
    from rewindfs.cli.app import App
    from rewindfs.cli.target import resolve
    from rewindfs.ui.app import RewindApp
    from rewindfs.ui.source import Source

    app = App(str(home), "never", False)
    source = Source(app, resolve(app, str(workdir)))
    ui = RewindApp(source, source.open(), clock=lambda: uidemo.NOW, live=None)
    async with ui.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        out.write_text(ui.export_screenshot(title="rewind ui"))


async def settle(pilot) -> None:
    while True:
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            return


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "ui",
                   help="where the SVG files go (default docs/ui)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.gettempdir()) / "rewind-ui-demo"
    for name, (keys, _) in SCREENS.items():
        shutil.rmtree(base, ignore_errors=True)
        home = base / "home"
        home.mkdir(parents=True)
        os.environ["HERMES_HOME"] = str(home)
        for key in [k for k in os.environ if k.startswith("REWIND_")]:
            del os.environ[key]
        uidemo.build(home, base / "shop")
        asyncio.run(shoot(home, base / "shop", keys, args.out / name))
        print(f"wrote {args.out / name}")
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
