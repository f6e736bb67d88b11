"""Maintenance as upstream Hermes's harnesses drive it (issue 13): the orphan allowlist that
binds a prune to the orphans a confirmation prompt showed."""

from __future__ import annotations

import shutil
from pathlib import Path

from rewindfs.store import Layout, Store, project_hash, take
from rewindfs.store.maintenance import sweep
from rewindfs.store.projects import read_record


def project_in(parent: Path, name: str) -> Path:
    """A project with a sibling, so that its parent stays populated when it is deleted."""
    (parent / "sibling").mkdir(parents=True, exist_ok=True)
    wd = parent / name
    wd.mkdir()
    (wd / "f.txt").write_text(name + "\n")
    return wd


def test_sweep_removes_only_allowlisted_orphans(home, tmp_path):
    layout = Layout(home / "checkpoints")
    store = Store(layout)
    shown, later = project_in(tmp_path / "p", "shown"), project_in(tmp_path / "p", "later")
    for wd in (shown, later):
        assert take(store, wd, "first").taken
    shutil.rmtree(shown)
    shutil.rmtree(later)
    # purge_deleted: an explicit prune (the caller showed a confirmation) does not wait
    # for the quarantine of deleted projects to end (store.maintenance.quarantine)
    policy = sweep.Policy(retention_days=0, orphan_allowlist=frozenset({project_hash(shown)}),
                          purge_deleted=True)
    todo = sweep.plan(layout, policy)
    assert [d.h16 for d in todo.projects] == [project_hash(shown)]
    report = sweep.run(layout, policy, todo)
    assert report.deleted_orphan == 1
    assert read_record(layout, project_hash(shown)) is None
    assert read_record(layout, project_hash(later)) is not None
