"""References a person can trust (issue 15): numbers that do not shift under a restore,
undo or revert; pre-rollback snapshots that never evict real checkpoints; time
references; relative ages and the first checkpoint's size in `rewind list`."""

from __future__ import annotations

import json
import re
import time

import pytest

from rewindfs.errors import InvalidInput
from rewindfs.store import take
from rewindfs.store.history import timeref


def listed(run_rewind, project) -> list[dict]:
    return json.loads(run_rewind("list", project, "--json", check=True).stdout)


@pytest.fixture
def three(store, project):
    """Checkpoints 3, 2, 1 holding a.txt/b.txt as v1, v2, v3; returns ids, newest first."""
    ids = []
    for version in (1, 2, 3):
        (project / "a.txt").write_text(f"a v{version}\n")
        (project / "b.txt").write_text(f"b v{version}\n")
        ids.append(take(store, project, f"version {version}").commit)
    return ids[::-1]


def test_a_number_keeps_its_checkpoint_across_restores(run_rewind, project, three):
    (project / "a.txt").write_text("edited by hand\n")
    first = run_rewind("restore", "3", "a.txt", "-C", project, "--yes", check=True)
    # the restore added a pre-rollback snapshot: 3 must still be the same checkpoint
    second = run_rewind("restore", "3", "b.txt", "-C", project, "--yes", check=True)
    assert (project / "a.txt").read_text() == "a v1\n"
    assert (project / "b.txt").read_text() == "b v1\n"
    for proc in (first, second):  # every restore names the stable id it restored to
        assert three[2][:8] in proc.stdout.splitlines()[0], proc.stdout
        assert "checkpoint 3" in proc.stdout.splitlines()[0]
    data = listed(run_rewind, project)
    numbered = [c for c in data if c["number"]]
    assert [c["hash"] for c in numbered] == three
    assert [c["number"] for c in numbered] == [1, 2, 3]
    pre = [c for c in data if c["pre_rollback"]]
    assert pre and all(c["number"] is None for c in pre)
    # the text list marks them with "-" instead of a number
    lines = run_rewind("list", project, check=True).stdout.splitlines()
    marked = [line for line in lines if re.match(r"^\s+-\s+[0-9a-f]{8}\s", line)]
    assert len(marked) == len(pre)
    assert all("pre-rollback snapshot" in line for line in marked)
    # undo and a revert-style restore do not shift numbers either
    undo = run_rewind("undo", "-C", project, check=True)
    assert re.search(r"[0-9a-f]{8}", undo.stdout)
    assert [c["hash"] for c in listed(run_rewind, project) if c["number"]] == three
    assert run_rewind("restore", "1", "-C", project, "--yes", check=True)
    assert (project / "a.txt").read_text() == "a v3\n"


def test_pre_rollback_snapshot_restorable_by_id(run_rewind, project, three):
    (project / "a.txt").write_text("precious\n")
    proc = run_rewind("restore", "2", "-C", project, "--yes", "--json", check=True)
    pre = json.loads(proc.stdout)["pre_rollback"]
    run_rewind("restore", pre[:8], "-C", project, "--yes", check=True)
    assert (project / "a.txt").read_text() == "precious\n"
    shown = run_rewind("show", pre[:8], "-C", project, check=True).stdout
    assert shown.startswith("pre-rollback snapshot of ")


def test_latest_is_checkpoint_1_not_a_pre_rollback(run_rewind, project, three):
    (project / "a.txt").write_text("changed\n")
    run_rewind("restore", "2", "-C", project, "--yes", check=True)
    data = listed(run_rewind, project)
    assert data[0]["pre_rollback"]  # the newest entry is the restore's snapshot
    latest = json.loads(run_rewind("show", "latest", "-C", project, "--json",
                                   check=True).stdout)
    assert latest["hash"] == three[0]


def test_mount_numbers_agree_with_list(run_rewind, project, three, home):
    from rewindfs.fs.model import Model
    from rewindfs.store import Layout

    (project / "a.txt").write_text("changed\n")
    run_rewind("restore", "3", "-C", project, "--yes", check=True)
    data = listed(run_rewind, project)
    listing = dict(Model(Layout(home / "checkpoints")).resolve("proj").entries())
    for cp in data:
        if cp["number"]:
            link = listing[str(cp["number"]).encode()]
            assert link.target().endswith(cp["short_hash"].encode())
    assert str(len(three) + 1).encode() not in listing  # no number for the pre-rollback one
    assert listing[b"latest"].target() == listing[b"1"].target()


def test_pre_rollback_snapshots_never_evict_checkpoints(run_rewind, project):
    env = {"REWIND_MAX_SNAPSHOTS": "5"}
    mine = []
    for i in range(5):
        (project / "a.txt").write_text(f"mine {i}\n")
        proc = run_rewind("checkpoint", project, "-m", f"mine {i}", "--json", env=env,
                          check=True)
        mine.append(json.loads(proc.stdout)["hash"])
    for _ in range(3):  # three restore/undo cycles: six pre-rollback snapshots
        run_rewind("restore", "5", "-C", project, "--yes", env=env, check=True)
        run_rewind("undo", "-C", project, env=env, check=True)
    (project / "a.txt").write_text("mine 5\n")
    proc = run_rewind("checkpoint", project, "-m", "mine 5", "--json", env=env, check=True)
    mine.append(json.loads(proc.stdout)["hash"])
    data = listed(run_rewind, project)
    assert [c["hash"] for c in data if c["number"]] == mine[::-1][:5]
    assert sum(c["pre_rollback"] for c in data) >= 5  # as many as max_snapshots


def test_old_pre_rollback_snapshots_still_count(store, project):
    """Beyond the newest PRE_ROLLBACK_KEPT, pre-rollback snapshots count against the cap,
    so restores alone cannot grow a history without bound."""
    from rewindfs.store.history.chain import checkpoints
    from rewindfs.store.history.prune import PRE_ROLLBACK_KEPT

    for i in range(PRE_ROLLBACK_KEPT + 4):
        (project / "a.txt").write_text(f"{i}\n")
        take(store, project, "pre-rollback snapshot (restoring to 12345678)")
    (project / "a.txt").write_text("mine\n")
    take(store, project, "mine", keep=3)
    history = checkpoints(store.repo, store.project(project).h16)
    assert len(history) == 3 + PRE_ROLLBACK_KEPT
    assert [c.reason for c in history if c.number] == ["mine"]


# -- time references ------------------------------------------------------------------


@pytest.fixture
def aged(store, project, monkeypatch):
    """Checkpoints taken 3 h, 40 min and 5 min ago (the clock is set back while taking
    them); returns their ids oldest first."""
    ids = []
    for minutes in (180, 40, 5):
        (project / "a.txt").write_text(f"{minutes} minutes ago\n")
        now = time.time() - minutes * 60
        with monkeypatch.context() as patched:
            patched.setattr(time, "time", lambda now=now: now)
            ids.append(take(store, project, f"{minutes} min").commit)
    return ids


def test_time_references(run_rewind, project, aged):
    old, middle, new = aged
    for ref, expected in [("10 minutes ago", middle), ("@10 minutes ago", middle),
                          ("2h ago", old), ("1 minute ago", new), ("now", new),
                          ("@now", new), (time.strftime("%Y-%m-%dT%H:%M",
                                                        time.localtime(time.time() - 3600)),
                                          old)]:
        shown = json.loads(run_rewind("show", ref, "-C", project, "--json", check=True).stdout)
        assert shown["hash"] == expected, ref
    diff = run_rewind("diff", "30 minutes ago", "-C", project, "--name-only", check=True)
    assert diff.stdout.splitlines() == ["a.txt"]
    restored = run_rewind("restore", "@1 hour ago", "-C", project, "--yes", check=True)
    assert (project / "a.txt").read_text() == "180 minutes ago\n"
    assert old[:8] in restored.stdout
    too_early = run_rewind("show", "@5 hours ago", "-C", project)
    assert too_early.returncode == 1 and "no checkpoint at or before" in too_early.stderr
    bad = run_rewind("show", "@25:99", "-C", project)
    assert bad.returncode == 1 and bad.stderr.startswith("rewind: invalid time")


def test_diff_without_reference_is_the_newest_against_the_work_tree(run_rewind, project,
                                                                    aged):
    (project / "a.txt").write_text("now\n")
    out = run_rewind("diff", "-C", project, check=True).stdout
    assert "-5 minutes ago" in out and "+now" in out


def test_timeref_grammar():
    now = time.mktime((2026, 3, 10, 12, 0, 0, 0, 0, -1))
    at = time.localtime
    assert timeref.parse("10 minutes ago", now) == now - 600
    assert timeref.parse("10m ago", now) == now - 600
    assert timeref.parse("3 days ago", now) == now - 3 * 86400
    assert at(timeref.parse("@yesterday-14:00", now))[:5] == (2026, 3, 9, 14, 0)
    assert at(timeref.parse("yesterday 09:30:15", now))[:6] == (2026, 3, 9, 9, 30, 15)
    assert at(timeref.parse("yesterday", now))[:5] == (2026, 3, 9, 23, 59)
    assert at(timeref.parse("08:15", now))[:5] == (2026, 3, 10, 8, 15)
    assert at(timeref.parse("2026-01-05", now))[:5] == (2026, 1, 5, 23, 59)
    assert at(timeref.parse("2026-01-05T14:00", now))[:5] == (2026, 1, 5, 14, 0)
    assert timeref.parse("2026-01-05T14:00:00Z", now) == 1767621600
    assert timeref.parse("2026-01-05T15:00:00+01:00", now) == 1767621600
    for not_a_time in ("v1", "before-refactor", "3", "abc123"):
        assert timeref.parse(not_a_time, now) is None
    for impossible in ("25:00", "2026-02-30", "@tomorrow", "@soon"):
        with pytest.raises(InvalidInput):
            timeref.parse(impossible, now)


# -- rewind list --------------------------------------------------------------------------


def test_list_shows_ages_and_first_checkpoint_size(run_rewind, project, aged):
    lines = run_rewind("list", project, check=True).stdout.splitlines()
    assert re.search(r"\b5m ago\b", lines[1]), lines[1]
    assert re.search(r"\b40m ago\b", lines[2]), lines[2]
    assert re.search(r"\b3h ago\b", lines[3]), lines[3]
    size = sum(p.stat().st_size for p in project.rglob("*") if p.is_file()) \
        - len("5 minutes ago\n") + len("180 minutes ago\n")
    # the first checkpoint: its file count and real size instead of "+0/-0"
    assert f"5 files, {size} B" in lines[3], lines[3]
    assert "+0/-0" not in lines[3]
    data = listed(run_rewind, project)
    assert data[-1]["bytes"] == size and "bytes" not in data[0]
