"""Store maintenance rules on real stores: max_snapshots with gc, the size cap, retention,
orphans (only with evidence), legacy v1 repositories, the automatic sweep and its marker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pygit2
import pytest
from conftest import DAY, age, isolated_git_env

from rewindfs.agent.manager import CheckpointManager
from rewindfs.store import Layout, Store, checkpoints, project_hash, set_label, take
from rewindfs.store.history.projects import read_record
from rewindfs.store.history.verdict import State, classify
from rewindfs.store.maintenance import auto, gc, legacy, sizecap, sizes, sweep
from rewindfs.store.maintenance.inventory import histories
from rewindfs.store.objects import marker, shadowrepos
from rewindfs.store.objects.locks import file_lock

KB = 1024


def fill(store: Store, workdir: Path, count: int, *, size: int = 30 * KB,
         keep: int | None = None) -> list[str]:
    """`count` checkpoints of `workdir`, each replacing data.bin with `size` random bytes."""
    workdir.mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(count):
        (workdir / "data.bin").write_bytes(os.urandom(size))
        (workdir / "note.txt").write_text(f"step {i}\n")
        made.append(take(store, workdir, f"{workdir.name} {i}", keep=keep).commit)
    return made


def chain_ids(store: Store, workdir: Path) -> list[str]:
    return [c.id for c in checkpoints(Store(store.layout).repo, project_hash(workdir))]


def git(layout: Layout, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], env=isolated_git_env(GIT_DIR=str(layout.store)),
                          capture_output=True, text=True)


# -- max_snapshots with gc ---------------------------------------------------------------

def test_gc_after_max_snapshots_keeps_ids_and_labels(store, layout, tmp_path, fsck):
    wd = tmp_path / "p"
    made = fill(store, wd, 3)
    set_label(store, project_hash(wd), "v1", made[0])
    made += fill(store, wd, 5, keep=3)[0:5]
    before = chain_ids(store, wd)
    assert len(before) == 4 and made[0] in before  # 3 kept + the labelled one
    result = gc.gc(layout, grace_minutes=0)
    assert result.ran and result.reclaimed > 0
    assert chain_ids(store, wd) == before
    repo = pygit2.Repository(str(layout.store))
    for commit in before:
        assert repo.get(commit) is not None
    for dropped in set(made) - set(before):
        assert repo.get(dropped) is None
    fsck()


def test_gc_grace_keeps_recent_garbage(store, layout, tmp_path):
    wd = tmp_path / "p"
    made = fill(store, wd, 4, keep=2)
    gc.gc(layout)  # default grace: everything is younger than it
    repo = pygit2.Repository(str(layout.store))
    assert all(repo.get(c) is not None for c in made)


def test_gc_refuses_to_run_twice_at_once(store, layout, tmp_path):
    fill(store, tmp_path / "p", 1)
    with file_lock(layout.lock_file("gc")):
        with pytest.raises(Exception, match="another gc"):
            gc.gc(layout)


# -- size cap ------------------------------------------------------------------------------

def test_size_cap_drops_oldest_first_never_the_last(store, layout, tmp_path, fsck):
    works = {name: tmp_path / name for name in ("a", "b", "c")}
    made = {name: fill(store, wd, n, size=60 * KB)
            for (name, wd), n in zip(works.items(), (6, 4, 1), strict=True)}
    label_target = made["a"][1]
    set_label(store, project_hash(works["a"]), "keep-me", label_target)
    gc.gc(layout, grace_minutes=0)
    repo = Store(layout).repo
    live = sizes.live_bytes(layout, list(repo.references))
    cap = live - 250 * KB  # about 4 checkpoints' worth over
    cap_plan = sizecap.plan(layout, repo, cap)
    dropped = [(d.h16, d.commit) for d in cap_plan.drops]
    ha, hb = project_hash(works["a"]), project_hash(works["b"])
    # oldest first across projects (a's were all taken before b's), never a project's
    # newest, never the labelled one; c has only one
    droppable = [(ha, c) for c in made["a"][:-1] if c != label_target] + \
        [(hb, c) for c in made["b"][:-1]]
    assert len(dropped) >= 3 and dropped == droppable[:len(dropped)]
    assert cap_plan.expected_live <= cap
    assert sizecap.apply(layout, repo, cap_plan) == len(dropped)
    after = {name: chain_ids(store, wd) for name, wd in works.items()}
    assert after["c"] == made["c"]
    assert all(len(ids) >= 1 for ids in after.values())
    assert label_target in after["a"]  # labelled: pinned, not dropped
    gc.gc(layout, grace_minutes=0)
    assert sizes.objects_bytes(layout) <= cap + 20 * KB  # packs have a little overhead
    fsck()


def test_size_cap_counts_live_objects_not_garbage(store, layout, tmp_path):
    wd = tmp_path / "p"
    fill(store, wd, 6, size=60 * KB, keep=2)  # 4 checkpoints of garbage, not yet gc'd
    repo = Store(layout).repo
    live = sizes.live_bytes(layout, list(repo.references))
    assert sizes.objects_bytes(layout) > live + 200 * KB
    cap_plan = sizecap.plan(layout, repo, live + 10 * KB)
    assert cap_plan.drops == [] and not cap_plan.over


def test_size_cap_under_cap_measures_nothing(store, layout, tmp_path):
    fill(store, tmp_path / "p", 2)
    cap_plan = sizecap.plan(layout, Store(layout).repo, 100 * 1024 * KB)
    assert cap_plan.live is None and cap_plan.drops == []


def test_sweep_enforces_cap_then_gc(store, layout, tmp_path):
    for name in ("a", "b"):
        fill(store, tmp_path / name, 12, size=100 * KB)
    report = sweep.run(layout, sweep.Policy(retention_days=7, max_total_size_mb=1,
                                            grace_minutes=0))
    assert report.dropped_checkpoints > 0 and report.gc_ran
    assert sizes.objects_bytes(layout) <= 1024 * KB + 20 * KB
    for name in ("a", "b"):
        assert 1 <= len(chain_ids(store, tmp_path / name)) < 12


# -- retention -----------------------------------------------------------------------------

def test_stale_project_removed_completely(store, layout, tmp_path, fsck):
    old, fresh = tmp_path / "old", tmp_path / "fresh"
    made = fill(store, old, 3)
    fill(store, fresh, 2)
    h16 = project_hash(old)
    set_label(store, h16, "release", made[-1])
    mgr = CheckpointManager(enabled=True, base=layout.base, auto_prune=False)
    assert mgr.record_agent_write(str(old), str(old / "note.txt"))
    (layout.store / "indexes").mkdir(exist_ok=True)
    (layout.store / "indexes" / h16).write_bytes(b"hermes index")
    # per-project data other modules keep is found by the hash: a notes ref, logs
    repo = Store(layout).repo
    repo.references.create(f"refs/notes/rewind/{h16}", pygit2.Oid(hex=made[0]))
    extra = [layout.store / "steps" / f"{h16}.jsonl", layout.store / "actions" / f"{h16}.jsonl"]
    others = layout.store / "steps" / f"{project_hash(fresh)}.jsonl"
    for path in [*extra, others]:
        path.parent.mkdir(exist_ok=True)
        path.write_text("{}\n")
    age(layout, old, 8)
    todo = sweep.plan(layout, sweep.Policy(retention_days=7))
    assert [(d.h16, d.reason) for d in todo.projects] == [(h16, State.STALE)]
    report = sweep.run(layout, sweep.Policy(retention_days=7, grace_minutes=0), todo)
    assert (report.scanned, report.deleted_stale, report.deleted_orphan) == (2, 1, 0)
    repo = Store(layout).repo
    assert not [n for n in repo.references if h16 in n]
    for leftover in (layout.worktree_admin(h16), layout.project_record(h16), *extra,
                     layout.store / "indexes" / h16, layout.store / "ledger" / f"{h16}.jsonl"):
        assert not leftover.exists(), leftover
    assert others.exists() and layout.lock_file(h16).exists()
    assert all(repo.get(c) is None for c in made)
    assert len(chain_ids(store, fresh)) == 2
    fsck()
    # the directory is still there: checkpointing it again starts a new history
    (old / "again.txt").write_text("again\n")
    assert take(Store(layout), old, "again").taken
    assert len(chain_ids(store, old)) == 1


def test_retention_zero_keeps_everything(store, layout, tmp_path):
    fill(store, tmp_path / "p", 1)
    age(layout, tmp_path / "p", 400)
    assert sweep.plan(layout, sweep.Policy(retention_days=0)).projects == []


def test_project_touched_after_the_plan_is_kept(store, layout, tmp_path):
    wd = tmp_path / "p"
    fill(store, wd, 1)
    age(layout, wd, 30)
    todo = sweep.plan(layout, sweep.Policy(retention_days=7))
    assert len(todo.projects) == 1
    fill(store, wd, 1)  # the agent came back between preview and confirmation
    report = sweep.run(layout, sweep.Policy(retention_days=7), todo)
    assert report.deleted_stale == 0 and report.kept_busy == 1
    assert len(chain_ids(store, wd)) == 2


def test_project_being_checkpointed_is_kept(store, layout, tmp_path):
    wd = tmp_path / "p"
    fill(store, wd, 1)
    age(layout, wd, 30)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with file_lock(layout.lock_file(project_hash(wd))):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        report = sweep.run(layout, sweep.Policy(retention_days=7))
    finally:
        release.set()
        holder.join()
    assert report.deleted_stale == 0 and report.kept_busy == 1
    assert read_record(layout, project_hash(wd)) is not None


def test_only_planned_projects_are_removed(store, layout, tmp_path):
    shown, later = tmp_path / "shown", tmp_path / "later"
    fill(store, shown, 1)
    fill(store, later, 1)
    age(layout, shown, 30)
    todo = sweep.plan(layout, sweep.Policy(retention_days=7))
    age(layout, later, 30)  # became stale after the preview: not shown, not removed
    report = sweep.run(layout, sweep.Policy(retention_days=7), todo)
    assert report.deleted_stale == 1
    assert read_record(layout, project_hash(later)) is not None


# -- orphans: evidence, then quarantine ----------------------------------------------------

def orphan_setup(store: Store, tmp_path: Path) -> Path:
    wd = tmp_path / "parent" / "proj"
    fill(store, wd, 2)
    (wd.parent / "sibling.txt").write_text("the parent holds more than the project\n")
    return wd


def quarantine_over(layout: Layout, wd: Path, days: float = 8) -> None:
    """Pretend the deletion was first seen `days` ago."""
    path = layout.project_record(project_hash(wd))
    data = json.loads(path.read_text())
    data["deleted_at"] = time.time() - days * DAY
    data["last_touch"] = min(data["last_touch"], data["deleted_at"])
    path.write_text(json.dumps(data))


def test_deleted_project_is_quarantined_then_removed(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    shutil.rmtree(wd)
    assert classify(read_record(layout, project_hash(wd)), 7) is State.DELETED
    report = sweep.run(layout, sweep.Policy(grace_minutes=0))
    assert (report.deleted_orphan, report.quarantined, report.newly_quarantined) == (0, 1, 1)
    seen = read_record(layout, project_hash(wd)).deleted_at
    assert seen is not None and time.time() - seen < 60
    assert len(chain_ids(store, wd)) == 2
    # a later sweep keeps it too, and does not restart the quarantine
    report = sweep.run(layout, sweep.Policy(grace_minutes=0))
    assert (report.deleted_orphan, report.newly_quarantined) == (0, 0)
    assert read_record(layout, project_hash(wd)).deleted_at == seen
    quarantine_over(layout, wd)
    assert classify(read_record(layout, project_hash(wd)), 7) is State.ORPHAN
    assert sweep.run(layout, sweep.Policy(grace_minutes=0)).deleted_orphan == 1
    assert read_record(layout, project_hash(wd)) is None


def test_quarantine_outlives_staleness(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    age(layout, wd, 30)  # untouched for a month, then deleted: the history is wanted now
    shutil.rmtree(wd)
    report = sweep.run(layout, sweep.Policy(retention_days=7))
    assert (report.deleted_stale, report.deleted_orphan, report.quarantined) == (0, 0, 1)
    assert len(chain_ids(store, wd)) == 2


def test_quarantine_without_retention_lasts_until_an_explicit_prune(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    shutil.rmtree(wd)
    sweep.run(layout, sweep.Policy(retention_days=0))
    quarantine_over(layout, wd, days=400)
    assert sweep.run(layout, sweep.Policy(retention_days=0)).deleted_orphan == 0
    report = sweep.run(layout, sweep.Policy(retention_days=0, purge_deleted=True))
    assert report.deleted_orphan == 1


def test_explicit_prune_may_remove_quarantined_projects(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    shutil.rmtree(wd)
    todo = sweep.plan(layout, sweep.Policy(purge_deleted=True))
    assert [(d.h16, d.reason) for d in todo.projects] == [(project_hash(wd), State.DELETED)]
    assert sweep.plan(layout, sweep.Policy()).projects == []
    report = sweep.run(layout, sweep.Policy(purge_deleted=True), todo)
    assert report.deleted_orphan == 1
    assert read_record(layout, project_hash(wd)) is None


def test_allowlist_binds_the_explicit_prune_to_what_was_shown(store, layout, tmp_path):
    shown, other = orphan_setup(store, tmp_path), tmp_path / "parent" / "other"
    fill(store, other, 1)
    shutil.rmtree(shown)
    shutil.rmtree(other)
    policy = sweep.Policy(purge_deleted=True,
                          orphan_allowlist=frozenset({project_hash(shown)}))
    report = sweep.run(layout, policy)
    assert report.deleted_orphan == 1
    assert read_record(layout, project_hash(shown)) is None
    assert read_record(layout, project_hash(other)) is not None


def test_quarantine_ends_when_the_directory_is_back(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    saved = tmp_path / "saved"
    wd.rename(saved)
    sweep.run(layout, sweep.Policy())
    assert read_record(layout, project_hash(wd)).deleted_at is not None
    saved.rename(wd)
    assert classify(read_record(layout, project_hash(wd)), 7) is State.LIVE
    sweep.run(layout, sweep.Policy())
    assert "deleted_at" not in read_record(layout, project_hash(wd)).extra
    # deleted again later: a new quarantine, not the old one
    shutil.rmtree(wd)
    assert sweep.run(layout, sweep.Policy()).newly_quarantined == 1


def test_a_checkpoint_ends_the_quarantine(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    shutil.rmtree(wd)
    sweep.run(layout, sweep.Policy())
    fill(store, wd, 1)  # the project is back at its path, and checkpointed
    record = read_record(layout, project_hash(wd))
    assert record.deleted_at is None and "deleted_at" not in record.extra
    assert classify(record, 7) is State.LIVE


def test_hermes_touch_ends_the_quarantine(store, layout, tmp_path):
    """Hermes rewrites the record keeping our keys but moving last_touch past deleted_at."""
    wd = orphan_setup(store, tmp_path)
    shutil.rmtree(wd)
    sweep.run(layout, sweep.Policy())
    path = layout.project_record(project_hash(wd))
    data = json.loads(path.read_text())
    data["last_touch"] = time.time() + 1
    path.write_text(json.dumps(data))
    assert read_record(layout, project_hash(wd)).deleted_at is None
    assert sweep.run(layout, sweep.Policy()).newly_quarantined == 1


def test_empty_parent_is_no_evidence(store, layout, tmp_path):
    """An unmounted drive can leave its mount point behind as an empty directory: the same
    directory, by device and inode, as before, and nothing proves the project was deleted."""
    wd = tmp_path / "parent" / "proj"
    fill(store, wd, 2)
    shutil.rmtree(wd)
    assert not any(wd.parent.iterdir())
    assert classify(read_record(layout, project_hash(wd)), 7) is State.MISSING
    report = sweep.run(layout, sweep.Policy())
    assert (report.deleted_orphan, report.quarantined) == (0, 0)
    assert "deleted_at" not in read_record(layout, project_hash(wd)).extra
    assert len(chain_ids(store, wd)) == 2


def test_kept_when_parent_is_missing(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    shutil.rmtree(wd.parent)  # like an unmounted drive: nothing proves the project was deleted
    assert classify(read_record(layout, project_hash(wd)), 7) is State.MISSING
    assert sweep.run(layout, sweep.Policy(purge_deleted=True)).deleted_orphan == 0
    assert len(chain_ids(store, wd)) == 2


def test_kept_when_parent_is_another_directory(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    wd.parent.rename(tmp_path / "elsewhere")
    wd.parent.mkdir()  # same path, another directory (like a mountpoint with nothing mounted)
    (wd.parent / "underlay.txt").write_text("x\n")
    assert classify(read_record(layout, project_hash(wd)), 7) is State.MISSING
    assert sweep.run(layout, sweep.Policy(purge_deleted=True)).deleted_orphan == 0


def test_kept_without_recorded_parent(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    path = layout.project_record(project_hash(wd))
    data = json.loads(path.read_text())
    for key in ("parent_dev", "parent_ino", "workdir_parent_dev", "workdir_parent_ino"):
        del data[key]  # as Hermes 0.19 writes records
    path.write_text(json.dumps(data))
    shutil.rmtree(wd)
    assert sweep.run(layout, sweep.Policy(purge_deleted=True)).deleted_orphan == 0


@pytest.mark.parametrize("spelling", ["hermes", "rewindfs"])
def test_either_tools_parent_identity_is_evidence(store, layout, tmp_path, spelling):
    wd = orphan_setup(store, tmp_path)
    path = layout.project_record(project_hash(wd))
    data = json.loads(path.read_text())
    drop = ("parent_dev", "parent_ino") if spelling == "hermes" else \
        ("workdir_parent_dev", "workdir_parent_ino")
    for key in drop:
        del data[key]
    path.write_text(json.dumps(data))
    shutil.rmtree(wd)
    assert classify(read_record(layout, project_hash(wd)), 7) is State.DELETED


def test_both_spellings_of_the_parent_identity_are_written(store, layout, tmp_path):
    wd = tmp_path / "parent" / "proj"
    fill(store, wd, 1)
    data = json.loads(layout.project_record(project_hash(wd)).read_text())
    st = os.stat(wd.parent)
    assert (data["workdir_parent_dev"], data["workdir_parent_ino"]) == (st.st_dev, st.st_ino)
    assert (data["parent_dev"], data["parent_ino"]) == (st.st_dev, st.st_ino)


def test_kept_with_unreadable_record(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    layout.project_record(project_hash(wd)).write_text("{not json")
    shutil.rmtree(wd)
    report = sweep.run(layout, sweep.Policy(purge_deleted=True))
    assert report.deleted_orphan == 0
    assert Store(layout).repo.references.get(Layout.project_ref(project_hash(wd))) is not None


def test_keep_orphans(store, layout, tmp_path):
    wd = orphan_setup(store, tmp_path)
    shutil.rmtree(wd)
    policy = sweep.Policy(delete_orphans=False, purge_deleted=True)
    assert sweep.run(layout, policy).deleted_orphan == 0
    quarantine_over(layout, wd)  # ... but once the quarantine is over, it is long untouched
    assert sweep.run(layout, policy).deleted_stale == 1


# -- legacy v1 repositories ----------------------------------------------------------------

def make_v1_repo(base: Path, workdir: Path) -> Path:
    """A Hermes v1 shadow repository, built with the git CLI as v1 did."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "f.txt").write_text("v1 content\n")
    shadow = base / project_hash(workdir)
    subprocess.run(["git", "init", "-q", "--bare", str(shadow)], env=isolated_git_env(),
                   check=True)
    env = isolated_git_env(GIT_DIR=str(shadow), GIT_WORK_TREE=str(workdir),
                           GIT_AUTHOR_NAME="h", GIT_AUTHOR_EMAIL="h@h",
                           GIT_COMMITTER_NAME="h", GIT_COMMITTER_EMAIL="h@h")
    (shadow / "HERMES_WORKDIR").write_text(str(workdir) + "\n")
    subprocess.run(["git", "add", "-A"], env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "before write_file"], env=env, check=True)
    return shadow


def test_v1_repos_move_to_a_legacy_archive_on_first_use(home, layout, tmp_path, project):
    layout.base.mkdir(parents=True)
    v1 = [make_v1_repo(layout.base, tmp_path / f"w{i}") for i in range(2)]
    stray = layout.base / "notes"
    stray.mkdir()
    (stray / "HEAD").write_text("not a v1 repo: no HERMES_WORKDIR\n")
    take(Store(layout), project, "first use")
    archives = legacy.archives(layout)
    assert len(archives) == 1 and archives[0].name.startswith("legacy-")
    assert sorted(p.name for p in archives[0].path.iterdir()) == sorted(p.name for p in v1)
    assert stray.exists() and not any(p.exists() for p in v1)
    moved = archives[0].path / v1[0].name
    log = subprocess.run(["git", "log", "--format=%s"], capture_output=True, text=True,
                         env=isolated_git_env(GIT_DIR=str(moved)))
    assert log.stdout.strip() == "before write_file"
    assert shadowrepos.shadow_repos(layout) == []
    take(Store(layout), project, "second use")  # nothing left to migrate: no new archive
    assert len(legacy.archives(layout)) == 1


def test_expired_legacy_archives_pruned(home, layout, tmp_path, project):
    layout.base.mkdir(parents=True)
    make_v1_repo(layout.base, tmp_path / "w")
    shadowrepos.migrate(layout, now=time.time() - 10 * DAY)
    make_v1_repo(layout.base, tmp_path / "w2")
    take(Store(layout), project, "migrates the second one now")
    names = [a.name for a in legacy.archives(layout)]
    assert len(names) == 2
    report = sweep.run(layout, sweep.Policy(retention_days=7))
    assert (report.deleted_legacy, report.deleted_stale) == (1, 1)  # counted as Hermes does
    assert report.bytes_freed > 0
    assert [a.name for a in legacy.archives(layout)] == names[1:]


def age_tree(path: Path, days: float) -> None:
    when = time.time() - days * DAY
    for item in [path, *path.rglob("*")]:
        os.utime(item, (when, when), follow_symlinks=False)


def test_pre_v2_repos_after_the_store_exists_are_pruned_in_place(home, layout, tmp_path,
                                                                 project):
    """Pre-v2 repositories that appear once the store exists stay where they are (as in
    Hermes) and prune judges them there: orphans with evidence, stale ones, and nothing
    on a guess."""
    take(Store(layout), project, "the store exists")
    parent = tmp_path / "work"
    parent.mkdir()
    (parent / "neighbour").write_text("x\n")
    gone = make_v1_repo(layout.base, parent / "gone")
    shutil.rmtree(parent / "gone")
    old = make_v1_repo(layout.base, tmp_path / "old")
    age_tree(old, 30)
    alive = make_v1_repo(layout.base, tmp_path / "alive")
    on_missing_volume = make_v1_repo(layout.base, tmp_path / "volume" / "w")
    shutil.rmtree(tmp_path / "volume")
    unmarked = make_v1_repo(layout.base, tmp_path / "unmarked")
    (unmarked / "HERMES_WORKDIR").unlink()
    shutil.rmtree(tmp_path / "unmarked")
    take(Store(layout), project, "no migration once the store exists")
    assert legacy.archives(layout) == []
    found = {r.path for r in shadowrepos.shadow_repos(layout)}
    assert found == {gone, old, alive, on_missing_volume, unmarked}
    todo = sweep.plan(layout, sweep.Policy(retention_days=7))
    assert {(d.repo.path, d.reason) for d in todo.repos} == {(gone, State.ORPHAN),
                                                             (old, State.STALE)}
    assert todo.scanned == 1 + 5
    report = sweep.run(layout, sweep.Policy(retention_days=7), todo)
    assert (report.deleted_orphan, report.deleted_stale, report.deleted_pre_v2) == (1, 1, 2)
    assert not gone.exists() and not old.exists()
    assert alive.exists() and on_missing_volume.exists() and unmarked.exists()


def test_pre_v2_orphans_follow_the_allowlist(home, layout, tmp_path, project):
    take(Store(layout), project, "the store exists")
    parent = tmp_path / "work"
    parent.mkdir()
    (parent / "neighbour").write_text("x\n")
    shown, later = make_v1_repo(layout.base, parent / "a"), make_v1_repo(layout.base, parent / "b")
    shutil.rmtree(parent / "a")
    shutil.rmtree(parent / "b")
    policy = sweep.Policy(orphan_allowlist=frozenset({str(shown)}))
    report = sweep.run(layout, policy)
    assert report.deleted_orphan == 1 and not shown.exists() and later.exists()
    assert sweep.run(layout, sweep.Policy(delete_orphans=False)).deleted_orphan == 0


def test_status_lists_pre_v2_repos(home, layout, tmp_path, project):
    take(Store(layout), project, "the store exists")
    repo = make_v1_repo(layout.base, tmp_path / "w")
    from rewindfs.store.maintenance.status import store_status

    info = store_status(layout, 7).to_dict()
    assert info["pre_v2_projects"] == [{"path": str(repo), "workdir": str(tmp_path / "w"),
                                        "exists": True}]


def test_auto_prune_runs_without_a_v2_store(home, layout, tmp_path):
    """As in Hermes: a base holding only pre-v2 repositories and archives is swept too,
    and the sweep does not create the store (which would stop Hermes's migration)."""
    layout.base.mkdir(parents=True)
    old = make_v1_repo(layout.base, tmp_path / "old")
    age_tree(old, 30)
    kept = make_v1_repo(layout.base, tmp_path / "kept")
    archive = layout.base / "legacy-20200101-000000"
    archive.mkdir()
    (archive / "x").write_text("old archive\n")
    report = auto.run_if_due(layout, sweep.Policy(retention_days=7), 24)
    assert report is not None and report.deleted_pre_v2 == 1 and report.deleted_legacy == 1
    assert (report.scanned, report.deleted_stale) == (2, 2)
    assert not old.exists() and kept.exists() and not archive.exists()
    assert not layout.store.exists()
    assert marker.last_run(layout) is not None
    assert auto.run_if_due(layout, sweep.Policy(retention_days=7), 24) is None


# -- the automatic sweep -------------------------------------------------------------------

@pytest.mark.parametrize("content", ["", "garbage", "nan", "inf", "-inf", "\xff"])
def test_corrupt_marker_counts_as_never_run(store, layout, tmp_path, content):
    fill(store, tmp_path / "p", 1)
    layout.prune_marker.write_text(content, encoding="latin-1")
    assert marker.last_run(layout) is None and marker.due(layout, 24)
    report = auto.run_if_due(layout, sweep.Policy(), 24)
    assert report is not None
    assert time.time() - marker.last_run(layout) < 60


def test_marker_limits_sweeps_to_one_per_interval(store, layout, tmp_path):
    fill(store, tmp_path / "p", 1)
    marker.mark(layout, time.time() - 3600)
    assert auto.run_if_due(layout, sweep.Policy(), 24) is None
    assert auto.run_if_due(layout, sweep.Policy(), 0.5) is not None
    assert auto.run_if_due(layout, sweep.Policy(), 0.5) is None
    marker.mark(layout, time.time() + 3600)  # the clock went back: run
    assert marker.due(layout, 24)


def test_new_store_counts_as_swept(store, layout, tmp_path):
    fill(store, tmp_path / "p", 1)
    assert not marker.due(layout, 24)


def test_one_sweep_when_many_start_at_once(store, layout, tmp_path):
    fill(store, tmp_path / "p", 1)
    layout.prune_marker.unlink()
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(
        auto.run_if_due(layout, sweep.Policy(), 24))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is not None for r in results) == 1


def test_ensure_checkpoint_starts_the_sweep_in_the_background(home, layout, tmp_path):
    stale, active = tmp_path / "stale", tmp_path / "active"
    mgr = CheckpointManager(enabled=True, base=layout.base, retention_days=7)
    stale.mkdir()
    (stale / "f").write_text("x\n")
    assert mgr.ensure_checkpoint(str(stale))
    age(layout, stale, 30)
    layout.prune_marker.write_text("corrupt")
    active.mkdir()
    (active / "f").write_text("y\n")
    mgr2 = CheckpointManager(enabled=True, base=layout.base, retention_days=7)
    assert mgr2.ensure_checkpoint(str(active))
    deadline = time.monotonic() + 60
    while read_record(layout, project_hash(stale)) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert read_record(layout, project_hash(stale)) is None
    assert marker.last_run(layout) is not None
    assert len(chain_ids(Store(layout), active)) == 1


def test_auto_prune_off(home, layout, tmp_path):
    wd = tmp_path / "p"
    wd.mkdir()
    (wd / "f").write_text("x\n")
    mgr = CheckpointManager(enabled=True, base=layout.base, auto_prune=False)
    layout.base.mkdir(parents=True)
    assert mgr.ensure_checkpoint(str(wd))
    layout.prune_marker.unlink()
    mgr.new_turn()
    (wd / "f").write_text("y\n")
    assert mgr.ensure_checkpoint(str(wd))
    # A sweep is started (or not) before ensure_checkpoint returns, by a thread that waits
    # for it: once every such thread is over, a sweep that was started has run.
    for thread in threading.enumerate():
        if thread.name == "rewindfs-auto-prune":
            thread.join(120)
    assert marker.last_run(layout) is None
    on = CheckpointManager(enabled=True, base=layout.base)  # the same, with auto_prune on
    (wd / "f").write_text("z\n")
    assert on.ensure_checkpoint(str(wd))
    for thread in threading.enumerate():
        if thread.name == "rewindfs-auto-prune":
            thread.join(120)
    assert marker.last_run(layout) is not None


# -- inventory -----------------------------------------------------------------------------

def test_histories_match_rewind_list(store, layout, tmp_path):
    wd = tmp_path / "p"
    made = fill(store, wd, 5, keep=2)
    set_label(store, project_hash(wd), "dropped", made[0])  # labelled before gc: pinned again
    hist = histories(Store(layout).repo)[project_hash(wd)]
    assert hist.count == len(chain_ids(store, wd)) == 3
    fill(store, wd, 1)
    set_label(store, project_hash(wd), "newest", chain_ids(store, wd)[0])
    fill(store, wd, 3, keep=2)
    hist = histories(Store(layout).repo)[project_hash(wd)]
    assert hist.count == len(chain_ids(store, wd)) == 4
    assert len(hist.unlabelled) == 2


def test_long_lived_manager_survives_removal_and_clear(home, layout, tmp_path):
    """An agent process outlives maintenance: its cached project handles must not break."""
    from rewindfs.store.maintenance import wipe

    wd = tmp_path / "p"
    wd.mkdir()
    mgr = CheckpointManager(enabled=True, base=layout.base, auto_prune=False)
    (wd / "f").write_text("1\n")
    assert mgr.ensure_checkpoint(str(wd))
    age(layout, wd, 30)
    assert sweep.run(layout, sweep.Policy(grace_minutes=0)).deleted_stale == 1
    mgr.new_turn()
    (wd / "f").write_text("2\n")
    assert mgr.ensure_checkpoint(str(wd))
    wipe.clear_base(layout)
    mgr.new_turn()
    (wd / "f").write_text("3\n")
    assert mgr.ensure_checkpoint(str(wd))
    assert [c["reason"] for c in mgr.list_checkpoints(str(wd))] == ["auto"]
