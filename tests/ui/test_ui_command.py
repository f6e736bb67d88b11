"""`rewind ui` off a terminal: one line saying it needs one, nothing drawn, exit 1; and
textual stays out of every other command (tests/cli/test_cli_imports.py)."""

from __future__ import annotations


def test_off_a_terminal_it_says_it_needs_one(run_rewind, demo):
    _, workdir = demo
    proc = run_rewind("ui", "-C", str(workdir))
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("rewind: rewind ui needs a terminal (for a script: "
                                   "rewind list, diff, restore)")
    assert proc.stdout == ""
