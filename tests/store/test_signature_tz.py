"""Every commit rewindfs writes carries the local offset from UTC in force at that moment:
daylight saving time included, notes commits included (one signature function).

Each zone runs in a process of its own (TZ is read once per process), at dates in
both halves of the year, and then for real: a checkpoint and a notes commit taken now.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from rewindfs.store import project_hash

ZONES = {  # (January, July) offsets in minutes east of UTC
    "Europe/Berlin": (60, 120),
    "America/New_York": (-300, -240),
    "UTC": (0, 0),
    "Asia/Kolkata": (330, 330),
}
JANUARY, JULY = 1768478400.0, 1784116800.0  # 2026-01-15 and 2026-07-15, 12:00 UTC

OFFSETS = r"""
import json, sys, time
from rewindfs.store.history.signature import signature
print(json.dumps([signature(float(t)).offset for t in sys.argv[1:]]
                 + [time.localtime().tm_gmtoff // 60]))
"""

TAKE = r"""
import sys
from rewindfs import CheckpointManager
m = CheckpointManager(enabled=True, base=sys.argv[1])
m.checkpoint(sys.argv[2], "now", state={"goal": {"text": "tz"}})
"""


def in_zone(zone: str, *args: str) -> subprocess.CompletedProcess:
    if not Path("/usr/share/zoneinfo", zone).exists():
        pytest.fail(f"no time zone data for {zone}: scripts/setup installs tzdata")
    env = {**os.environ, "TZ": zone}
    return subprocess.run([sys.executable, "-c", *args], env=env, capture_output=True,
                          text=True, timeout=60, check=True)


@pytest.mark.parametrize("zone", sorted(ZONES))
def test_the_offset_in_force_at_that_moment(zone):
    january, july, _now = json.loads(in_zone(zone, OFFSETS, str(JANUARY), str(JULY)).stdout)
    assert (january, july) == ZONES[zone]


@pytest.mark.parametrize("zone", sorted(ZONES))
def test_checkpoints_and_notes_carry_it(zone, tmp_path, project):
    base = tmp_path / "base"
    in_zone(zone, TAKE, str(base), str(project))
    *_, now = json.loads(in_zone(zone, OFFSETS).stdout)
    repo = pygit2.Repository(str(base / "store"))
    h16 = project_hash(project)
    checkpoint = repo.references.get(f"refs/hermes/{h16}").peel(pygit2.Commit)
    note = repo.references.get(f"refs/notes/rewind/{h16}").peel(pygit2.Commit)
    assert note.tree  # the state really went into a notes commit
    for commit in (checkpoint, note):
        assert commit.author.offset == commit.committer.offset == now, commit.message
