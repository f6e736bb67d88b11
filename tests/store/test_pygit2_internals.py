"""A pygit2 without an internal rewindfs uses fails with one clear line naming it, not an
AttributeError deep inside a command (pyproject also bounds pygit2 below 1.22)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

WITHOUT = r"""
import sys, pygit2.utils
del pygit2.utils.StrArray  # as a pygit2 release that renamed it would be
from rewindfs.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("command", [["list"], ["checkpoint"]])
def test_a_missing_internal_is_named_in_one_line(command, home, project, run_rewind):
    run_rewind("checkpoint", project, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    env["REWIND_NO_SERVER"] = "1"   # run in its own process (no resident one)
    env["HERMES_HOME"] = str(home)
    proc = subprocess.run([sys.executable, "-c", WITHOUT, *command], cwd=project, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "lacks pygit2.utils.StrArray" in proc.stderr


def test_pyproject_bounds_pygit2():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [d for d in deps if d.startswith("pygit2")] == ["pygit2>=1.21,<1.22"]
