"""Fixtures of the `rewind ui` tests: the demo project (scripts/uidemo.py)."""

from __future__ import annotations

import pytest
import uihelp  # noqa: F401 - puts scripts/ on sys.path
import uidemo


@pytest.fixture
def demo(home, tmp_path):
    """(home, workdir) of the demo project: three checkpoints, notes.md deleted since."""
    workdir = tmp_path / "shop"
    uidemo.build(home, workdir)
    return home, workdir
