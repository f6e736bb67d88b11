"""gc next to live checkpoints and readers, and maintenance on stores Hermes 0.19 wrote."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pygit2
import pytest
from conftest import RACE_COMMITS, RACE_DEADLINE, flatten_tree, wait_for

from rewindfs.store import Layout, Store, checkpoints, project_hash, take
from rewindfs.store.history.verdict import State
from rewindfs.store.maintenance import gc, sweep
from rewindfs.store.maintenance.status import store_status

DAY = 86400
GRACE_MINUTES = 2 / 60  # two seconds: old garbage really goes while checkpoints are written


def complete(repo: pygit2.Repository, commit: str) -> bool:
    """Every object the checkpoint needs is readable."""
    try:
        flatten_tree(repo, repo[commit].peel(pygit2.Commit).tree)
        return True
    except (KeyError, pygit2.GitError):
        return False


def gc_in_background(layout: Layout) -> tuple[threading.Thread, threading.Event]:
    """A gc (no grace period) in another thread; the event is set when it is over."""
    done = threading.Event()

    def work() -> None:
        try:
            gc.gc(layout, 0, wait=True)
        finally:
            done.set()

    worker = threading.Thread(target=work)
    worker.start()
    return worker, done


def test_checkpoints_racing_gc_lose_nothing(store, layout, tmp_path, fsck):
    """Writers take checkpoints (some at max_snapshots, cycling file contents so objects
    gc is about to drop get reused) while gc runs in a loop; afterwards every checkpoint
    that should exist does, completely, and `git fsck --strict` is clean."""
    stop = threading.Event()
    reported: dict[str, list[str]] = {}
    errors: list[str] = []

    def writer(name: str, keep: int | None) -> None:
        wd = tmp_path / name
        (wd / "sub").mkdir(parents=True)
        local = Store(layout)  # each thread its own handles, like separate agents
        i = 0
        try:
            while not stop.is_set():
                (wd / "cycle.txt").write_text(f"version {i % 5}\n" * 200)
                (wd / "sub" / f"new{i % 7}.bin").write_bytes(os.urandom(2000))
                result = take(local, wd, f"{name} {i}", keep=keep)
                if result.taken:
                    reported.setdefault(name, []).append(result.commit)
                i += 1
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"{name}: {exc!r}")

    gc_runs: list[gc.GcResult] = []

    def collector() -> None:
        while not stop.is_set() or not gc_runs:
            try:
                gc_runs.append(gc.gc(layout, GRACE_MINUTES, wait=True))
            except Exception as exc:  # noqa: BLE001
                errors.append(f"gc: {exc!r}")

    store.ensure()
    threads = [threading.Thread(target=writer, args=(f"w{k}", keep))
               for k, keep in enumerate((None, None, 3, 2))]
    threads.append(threading.Thread(target=collector))
    for t in threads:
        t.start()
    try:
        wait_for(lambda: errors or (len(gc_runs) >= 3 and all(
            len(reported.get(f"w{k}", [])) >= RACE_COMMITS for k in range(4))),
            f"{RACE_COMMITS} checkpoints per writer and 3 gc runs", RACE_DEADLINE)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors, errors[:3]
    gc.gc(layout, immediate=True)  # the writers are done: what they dropped goes now
    repo = pygit2.Repository(str(layout.store))
    for name in ("w0", "w1"):  # no pruning: every reported checkpoint must be there
        missing = [c for c in reported[name] if not complete(repo, c)]
        assert not missing, f"{name}: {len(missing)} of {len(reported[name])} lost"
    for name, keep in (("w2", 3), ("w3", 2)):  # pruned: the newest `keep` are the history
        history = [c.id for c in checkpoints(repo, project_hash(tmp_path / name))]
        assert history == list(reversed(reported[name][-keep:]))
        assert all(complete(repo, c) for c in history)
        assert repo.get(reported[name][0]) is None  # really pruned
    fsck()


@pytest.mark.long
def test_long_lived_reader_reads_through_gc(store, layout, tmp_path):
    """A reader that keeps its repository open (as the mount does) keeps reading every
    kept checkpoint while boundaries move and gc repacks and prunes underneath it."""
    wd = tmp_path / "p"
    wd.mkdir()
    reader = pygit2.Repository(str(layout.store)) if store.exists() else None
    failures: list[str] = []
    overlapped = 0  # reads that ended before the gc they began during
    for round_ in range(8):
        (wd / f"r{round_}.bin").write_bytes(os.urandom(20_000))
        (wd / "same.txt").write_text(f"round {round_}\n")
        commit = take(store, wd, f"round {round_}", keep=3).commit
        reader = reader or pygit2.Repository(str(layout.store))
        expected = flatten_tree(pygit2.Repository(str(layout.store)),
                                pygit2.Repository(str(layout.store))[commit].tree)
        worker, done = gc_in_background(layout)
        while not done.is_set():
            try:
                if flatten_tree(reader, reader[commit].peel(pygit2.Commit).tree) != expected:
                    failures.append(f"round {round_}: different content")
            except (KeyError, pygit2.GitError) as exc:
                failures.append(f"round {round_}: {exc}")
            overlapped += not done.is_set()
            # A pause between reads lets the gc's thread have the GIL: a loop that
            # never lets go hands it over only every switch interval, and the gc's
            # many small steps (each git process it starts and reads) then took ~100 s
            # in a run of this test alone.
            done.wait(0.001)
        worker.join()
        assert flatten_tree(reader, reader[commit].peel(pygit2.Commit).tree) == expected
    assert not failures, failures[:3]
    assert overlapped, "no read overlapped a gc: the scenario never happened"


# -- a real mount --------------------------------------------------------------------------

@pytest.mark.long
def test_mounted_reader_keeps_reading_through_gc(store, layout, tmp_path, mount):
    wd = tmp_path / "proj"
    wd.mkdir()
    (wd / "big.bin").write_bytes(os.urandom(400_000))
    take(store, wd, "first")
    mnt = mount()
    overlapped = 0  # reads that began after a gc started and ended before it did
    for round_ in range(5):
        (wd / "big.bin").write_bytes(os.urandom(400_000))
        commit = take(store, wd, f"round {round_}", keep=2).commit
        want = (wd / "big.bin").read_bytes()
        wait_for(lambda c=commit: os.getxattr(mnt / "proj" / "1", "user.rewind.hash")
                 == c.encode(), "the mount to show the checkpoint")
        worker, done = gc_in_background(layout)
        reads = 0
        while not done.is_set() or reads == 0:
            with open(mnt / "proj" / "1" / "big.bin", "rb") as fh:
                os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                assert fh.read() == want
            reads += 1
            overlapped += not done.is_set()
        worker.join()
    assert overlapped, "no read overlapped a gc: the scenario never happened"


# -- stores written by Hermes 0.19 ---------------------------------------------------------

@pytest.fixture
def hermes(hcm):
    return hcm.CheckpointManager(enabled=True, max_snapshots=20)


def hermes_project(hermes, tmp_path: Path, name: str, count: int) -> Path:
    wd = tmp_path / name
    wd.mkdir()
    for i in range(count):
        (wd / "f.txt").write_text(f"{name} {i}\n")
        (wd / f"{i}.bin").write_bytes(os.urandom(3000))
        assert hermes.ensure_checkpoint(str(wd), f"hermes {i}")
        hermes.new_turn()
    return wd


def test_status_of_a_hermes_store(hermes, hcm, layout, tmp_path):
    a = hermes_project(hermes, tmp_path, "a", 3)
    b = hermes_project(hermes, tmp_path, "b", 2)
    info = store_status(layout, 7)
    theirs = hcm.store_status(layout.base)
    by_dir = {p.workdir: p for p in info.projects}
    assert set(by_dir) == {str(a), str(b)} == {p["workdir"] for p in theirs["projects"]}
    for p in theirs["projects"]:
        ours = by_dir[p["workdir"]]
        assert ours.checkpoints == p["commits"] == len(hermes.list_checkpoints(p["workdir"]))
        assert ours.state == "live" and ours.size_bytes >= 3000
    assert info.project_count == theirs["project_count"] == 2


def test_prune_a_hermes_store(hermes, hcm, layout, tmp_path, fsck):
    stale = hermes_project(hermes, tmp_path, "stale", 3)
    gone = hermes_project(hermes, tmp_path, "gone", 2)
    live = hermes_project(hermes, tmp_path, "live", 2)
    record = layout.project_record(project_hash(stale))
    data = json.loads(record.read_text())
    data["last_touch"] = time.time() - 30 * DAY
    record.write_text(json.dumps(data))
    shutil.rmtree(gone)  # Hermes keeps no parent identity: no evidence, so kept
    todo = sweep.plan(layout, sweep.Policy(retention_days=7))
    assert [(d.workdir, d.reason) for d in todo.projects] == [(str(stale), State.STALE)]
    report = sweep.run(layout, sweep.Policy(retention_days=7, grace_minutes=0), todo)
    assert (report.deleted_stale, report.deleted_orphan, report.errors) == (1, 0, 0)
    assert not (layout.store / "indexes" / project_hash(stale)).exists()
    assert hermes.list_checkpoints(str(stale)) == []
    assert len(checkpoints(pygit2.Repository(str(layout.store)), project_hash(gone))) == 2
    (live / "after.txt").write_text("after\n")
    hermes.new_turn()
    assert hermes.ensure_checkpoint(str(live), "after our prune")
    assert len(hermes.list_checkpoints(str(live))) == 3
    fsck()
    # and Hermes's own sweep still works on the store we maintained
    assert hcm.prune_checkpoints(retention_days=7, checkpoint_base=layout.base)["errors"] == 0
