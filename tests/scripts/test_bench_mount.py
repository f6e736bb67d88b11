"""scripts/bench_mount on a machine where borg cannot mount: borg is left out with the
reason printed, never a traceback before the table (issue 24).

A fresh Debian machine gets borgbackup without the FUSE binding Debian only recommends
for it; `BORG_FUSE_IMPL=none` makes a real borg answer exactly as it does there. Where
borg is not installed at all, the reason is that. Nothing here installs anything or
times anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "scripts" / "bench_mount.py"


def bench(*args: str, env: dict[str, str] | None = None,
          timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout, cwd=ROOT)


def test_check_others_names_why_borg_cannot_mount():
    proc = bench("--check-others", env={"BORG_FUSE_IMPL": "none"})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert set(lines) == {"restic", "borg"}
    if shutil.which("borg") is None:
        assert lines["borg"] == "left out: borg is not installed"
    else:  # borg's own words: no FUSE binding for it here
        assert lines["borg"].startswith("left out: borg mount not available: no FUSE support")


def test_check_others_without_borg_on_path(tmp_path):
    bin_dir = tmp_path / "bin"  # PATH with the tools the probe itself needs, and no borg
    bin_dir.mkdir()
    for tool in ("bash", "dpkg"):
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    proc = bench("--check-others", env={"PATH": str(bin_dir)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "borg: left out: borg is not installed" in proc.stdout.splitlines()
    assert "restic: left out: restic is not installed" in proc.stdout.splitlines()


@pytest.mark.long
def test_a_quick_run_leaves_borg_out_and_prints_the_table(fuse_usable, tmp_path):
    """The whole bench, tiny and once, with borg unable to mount: the table comes, with
    borg left out and why; no timing is looked at (nor the machine's caches dropped)."""
    proc = bench("--files", "40", "--repeats", "1", "--cold-repeats", "1", "--no-stock",
                 "--no-install", "--no-drop-caches", "--tmp", str(tmp_path / "bench"),
                 env={"BORG_FUSE_IMPL": "none"})
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("## rewind mount benchmark"), out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()
            if line.startswith("| ") and "---" not in line}
    assert "cold diff -r vs work tree" in rows and "warm find" in rows
    assert "left out (below)" in rows["warm find"]  # the borg column
    reason = next(line for line in out.splitlines() if line.startswith("borg left out: "))
    assert "not installed" in reason or "no FUSE support" in reason
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(tmp_path) not in mounts  # every subject unmounted
