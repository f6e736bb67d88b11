"""Maintenance as upstream Hermes's harnesses drive it (issue 13): the orphan allowlist that
binds a prune to the orphans a confirmation prompt showed, and rewindfs.hermes's
prune_checkpoints, maybe_auto_prune_checkpoints, store_status, clear_all and clear_legacy
with Hermes's signatures and result dictionaries."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import age

import rewindfs.hermes as hermes
from rewindfs.store import Layout, Store, project_hash, take
from rewindfs.store.history.projects import read_record
from rewindfs.store.maintenance import sweep


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


# -- rewindfs.hermes: Hermes's module-level maintenance functions ---------------------------


@pytest.fixture
def base(home, monkeypatch):
    path = home / "checkpoints"
    monkeypatch.setattr(hermes, "CHECKPOINT_BASE", path)
    return path


def checkpointed(mgr, wd: Path) -> Path:
    mgr.new_turn()
    assert mgr.ensure_checkpoint(str(wd), wd.name) is True
    return wd


def shadow_repo(base: Path, name: str, workdir: Path, mtime: float | None = None,
                objects: bool = True) -> Path:
    """A pre-v2 shadow repository directly under the base, as Hermes v1 left them
    (`objects=False`: the shape Hermes's own tests seed, a HEAD, HERMES_WORKDIR and
    info/exclude without an objects directory, which Hermes takes for one all the same)."""
    repo = base / name
    (repo / "info").mkdir(parents=True)
    (repo / "info" / "exclude").write_text("node_modules/\n")
    if objects:
        (repo / "objects").mkdir()
    (repo / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "HERMES_WORKDIR").write_text(f"{workdir}\n")
    if mtime is not None:
        for path in [*repo.rglob("*"), repo]:
            os.utime(path, (mtime, mtime))
    return repo


def old_archive(base: Path, name: str = "legacy-20200101-000000") -> Path:
    archive = base / name
    archive.mkdir(parents=True)
    (archive / "junk").write_bytes(b"x" * 1000)
    return archive


HERMES_KEYS = {"scanned", "deleted_orphan", "deleted_stale", "errors", "bytes_freed"}


def test_prune_checkpoints_orphans_with_hermes_counts(base, tmp_path):
    mgr = hermes.CheckpointManager(enabled=True)
    alive = checkpointed(mgr, project_in(tmp_path / "p", "alive"))
    gone = checkpointed(mgr, project_in(tmp_path / "p", "gone"))
    shutil.rmtree(gone)
    result = hermes.prune_checkpoints(retention_days=0, checkpoint_base=base)
    assert HERMES_KEYS <= result.keys()
    assert result["scanned"] == 2 and result["deleted_orphan"] == 1
    assert result["deleted_stale"] == 0 and result["errors"] == 0
    layout = Layout(base)
    assert read_record(layout, project_hash(alive)) is not None
    assert read_record(layout, project_hash(gone)) is None


def test_prune_checkpoints_allowlist_binds_to_the_preview(base, tmp_path):
    mgr = hermes.CheckpointManager(enabled=True)
    shown = checkpointed(mgr, project_in(tmp_path / "p", "shown"))
    later = checkpointed(mgr, project_in(tmp_path / "p", "later"))
    shown_repo = shadow_repo(base, "a" * 16, tmp_path / "p" / "old-shown")
    later_repo = shadow_repo(base, "b" * 16, tmp_path / "p" / "old-later")
    shutil.rmtree(shown)
    preview = hermes.store_status()  # what a confirmation prompt shows
    allow = {p["hash"] for p in preview["projects"] if not p["exists"]}
    allow |= {r["path"] for r in preview["pre_v2_projects"] if not r["exists"]}
    assert allow == {project_hash(shown), str(shown_repo), str(later_repo)}
    allow.discard(str(later_repo))  # the person said no to that one
    shutil.rmtree(later)  # and this one went while the person was answering
    result = hermes.prune_checkpoints(retention_days=0, orphan_allowlist=allow)
    assert result["deleted_orphan"] == 2
    layout = Layout(base)
    assert read_record(layout, project_hash(shown)) is None and not shown_repo.exists()
    assert read_record(layout, project_hash(later)) is not None and later_repo.exists()


def test_allowlist_removes_the_approved_deleted_project_at_once(base, tmp_path):
    """Hermes's flow: a preview shows the deleted projects, the person approves some, and
    prune deletes exactly those, whatever the quarantine; the others stay, quarantined."""
    mgr = hermes.CheckpointManager(enabled=True)
    approved = checkpointed(mgr, project_in(tmp_path / "p", "approved"))
    unapproved = checkpointed(mgr, project_in(tmp_path / "p", "unapproved"))
    shutil.rmtree(approved)
    shutil.rmtree(unapproved)
    result = hermes.prune_checkpoints(retention_days=7, checkpoint_base=base,
                                      orphan_allowlist={project_hash(approved)})
    assert result["deleted_orphan"] == 1 and result["errors"] == 0
    layout = Layout(base)
    assert read_record(layout, project_hash(approved)) is None
    kept = read_record(layout, project_hash(unapproved))
    assert kept is not None and kept.deleted_at is not None  # its quarantine began


@pytest.mark.parametrize("objects", [True, False], ids=["with-objects", "hermes-shape"])
def test_allowlist_removes_the_approved_pre_v2_repository(base, tmp_path, objects):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "neighbour").write_text("x\n")  # the parent holds something else
    approved = shadow_repo(base, "a" * 16, tmp_path / "p" / "approved-gone", objects=objects)
    unapproved = shadow_repo(base, "b" * 16, tmp_path / "p" / "unapproved-gone",
                             objects=objects)
    result = hermes.prune_checkpoints(retention_days=0, checkpoint_base=base,
                                      orphan_allowlist={str(approved)})
    assert result["scanned"] == 2
    assert result["deleted_orphan"] == 1 and result["deleted_pre_v2"] == 1
    assert not approved.exists() and unapproved.exists()


def test_pre_v2_repositories_are_scanned_as_hermes_scans_them(base, tmp_path):
    """A HEAD and a HERMES_WORKDIR make a pre-v2 repository (objects/ or not); a
    directory with neither is not one, and neither is a lone HEAD."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "neighbour").write_text("x\n")
    gone = shadow_repo(base, "f" * 16, tmp_path / "p" / "gone", objects=False)
    alive = shadow_repo(base, "e" * 16, tmp_path / "p", objects=False)
    (base / "garbage-dir").mkdir()
    (base / "garbage-dir" / "random.txt").write_text("hi")
    (base / "notes").mkdir()
    (base / "notes" / "HEAD").write_text("a file named HEAD, no repository\n")
    kept = hermes.prune_checkpoints(retention_days=0, delete_orphans=False)
    assert kept["scanned"] == 2 and kept["deleted_orphan"] == 0
    status = hermes.store_status()
    assert {r["path"] for r in status["pre_v2_projects"]} == {str(gone), str(alive)}
    swept = hermes.prune_checkpoints(retention_days=0)
    assert swept["scanned"] == 2 and swept["deleted_orphan"] == 1
    assert not gone.exists() and alive.exists()
    assert (base / "garbage-dir" / "random.txt").exists() and (base / "notes").exists()


def test_prune_checkpoints_counts_stale_projects_and_legacy_archives(base, tmp_path):
    mgr = hermes.CheckpointManager(enabled=True)
    fresh = checkpointed(mgr, project_in(tmp_path / "p", "fresh"))
    stale = checkpointed(mgr, project_in(tmp_path / "p", "stale"))
    age(Layout(base), stale, 60)
    archive = old_archive(base)
    result = hermes.prune_checkpoints(retention_days=30, delete_orphans=False)
    assert result["deleted_stale"] == 2  # the project and the archive, as Hermes counts
    assert result["bytes_freed"] > 0
    assert not archive.exists()
    assert read_record(Layout(base), project_hash(fresh)) is not None
    assert read_record(Layout(base), project_hash(stale)) is None


def test_prune_checkpoints_without_a_base_changes_nothing(tmp_path):
    missing = tmp_path / "does-not-exist"
    result = hermes.prune_checkpoints(checkpoint_base=missing)
    assert result["scanned"] == 0 and result["deleted_orphan"] == 0
    assert not missing.exists()


def test_maintenance_never_raises(tmp_path):
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("x")
    assert HERMES_KEYS <= hermes.prune_checkpoints(checkpoint_base=not_a_dir).keys()
    out = hermes.maybe_auto_prune_checkpoints(checkpoint_base=not_a_dir)
    assert set(out) <= {"skipped", "result", "error"}
    assert hermes.store_status(checkpoint_base=not_a_dir)["project_count"] == 0
    assert hermes.clear_legacy(checkpoint_base=not_a_dir) == {"bytes_freed": 0, "deleted": 0}
    assert not_a_dir.read_text() == "x"


def test_maybe_auto_prune_runs_once_per_interval(base, tmp_path):
    base.mkdir(parents=True)
    (base / ".last_prune").write_text("not-a-timestamp")  # corrupt: counts as never run
    first = shadow_repo(base, "0" * 16, tmp_path / "q" / "gone")
    (tmp_path / "q" / "other").mkdir(parents=True)  # the parent is there and populated: deleted
    out = hermes.maybe_auto_prune_checkpoints(checkpoint_base=base, min_interval_hours=24)
    assert out["skipped"] is False and out["result"]["deleted_orphan"] == 1
    assert not first.exists()
    assert float((base / ".last_prune").read_text()) > 0
    second_repo = shadow_repo(base, "2" * 16, tmp_path / "q" / "also-gone")
    again = hermes.maybe_auto_prune_checkpoints(checkpoint_base=base, min_interval_hours=24)
    assert again == {"skipped": True}
    assert second_repo.exists()


def test_maybe_auto_prune_keeps_a_deleted_project_in_quarantine(base, tmp_path):
    """Unlike Hermes, the automatic sweep does not remove a deleted project's history
    at once: the quarantine (retention_days) gives a person time to notice."""
    mgr = hermes.CheckpointManager(enabled=True)
    gone = checkpointed(mgr, project_in(tmp_path / "p", "gone"))
    shutil.rmtree(gone)
    (base / ".last_prune").unlink()
    out = hermes.maybe_auto_prune_checkpoints(retention_days=7)
    assert out["skipped"] is False and out["result"]["deleted_orphan"] == 0
    assert read_record(Layout(base), project_hash(gone)) is not None
    # an explicit prune does not wait
    assert hermes.prune_checkpoints(retention_days=7)["deleted_orphan"] == 1


def test_maybe_auto_prune_without_a_base(tmp_path):
    missing = tmp_path / "nothing-here"
    out = hermes.maybe_auto_prune_checkpoints(checkpoint_base=missing)
    assert out["skipped"] is False and out["result"]["scanned"] == 0
    assert not missing.exists()


def test_store_status(base, tmp_path):
    mgr = hermes.CheckpointManager(enabled=True)
    wd = checkpointed(mgr, project_in(tmp_path / "p", "proj"))
    old_archive(base)
    repo = shadow_repo(base, "c" * 16, wd)
    info = hermes.store_status()
    for key in ("base", "store_size_bytes", "legacy_size_bytes", "total_size_bytes",
                "project_count", "projects", "pre_v2_projects", "legacy_archives"):
        assert key in info, key
    assert info["base"] == str(base) and info["project_count"] == 1
    project = info["projects"][0]
    assert project["workdir"] == str(wd) and project["exists"] is True
    assert project["commits"] >= 1 and project["hash"] == project_hash(wd)
    assert project["created_at"] and project["last_touch"]
    assert info["pre_v2_projects"] == [{"path": str(repo), "workdir": str(wd), "exists": True}]
    [archive] = info["legacy_archives"]
    assert archive["name"] == "legacy-20200101-000000" and archive["size_bytes"] >= 1000
    assert archive["mtime"] > 0
    assert info["total_size_bytes"] >= info["store_size_bytes"] + info["legacy_size_bytes"]


def test_clear_all_then_a_no_op(base, tmp_path):
    mgr = hermes.CheckpointManager(enabled=True)
    checkpointed(mgr, project_in(tmp_path / "p", "proj"))
    result = hermes.clear_all()
    assert result["deleted"] is True and result["bytes_freed"] > 0
    assert not base.exists()
    assert hermes.clear_all() == {"bytes_freed": 0, "deleted": False}


def test_clear_legacy_only_removes_archives(base, tmp_path):
    mgr = hermes.CheckpointManager(enabled=True)
    checkpointed(mgr, project_in(tmp_path / "p", "proj"))
    archive = old_archive(base)
    result = hermes.clear_legacy()
    assert result == {"deleted": 1, "bytes_freed": result["bytes_freed"]}
    assert result["bytes_freed"] > 0
    assert not archive.exists() and (base / "store" / "HEAD").exists()
