"""docs/ui.md's screenshots are what `rewind ui` draws today: scripts/gen_ui_screenshots
made now writes the very files docs/ui/ holds (else: run it, and look at the new ones),
and the page shows each of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_screenshots_are_current_and_shown(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_ui_screenshots.py"),
                           "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    made = sorted(p.name for p in tmp_path.glob("*.svg"))
    kept = sorted(p.name for p in (ROOT / "docs" / "ui").glob("*.svg"))
    assert made == kept, "docs/ui/ is not what scripts/gen_ui_screenshots writes"
    stale = [name for name in made
             if (tmp_path / name).read_bytes() != (ROOT / "docs" / "ui" / name).read_bytes()]
    assert not stale, f"stale screenshots (run scripts/gen_ui_screenshots): {stale}"
    page = (ROOT / "docs" / "ui.md").read_text()
    assert all(f"(ui/{name})" in page for name in made), "docs/ui.md leaves one out"
