"""The history records (store.history.records.records) agree with the objects after every writer.

Each test keeps one records file alive across the writers a store sees (a checkpoint, a
restore's pre-rollback snapshot, labels, prune, delete, adopt, gc, Hermes's own manager
writing the same ref) and compares what is read through the records with what is read
from the commits themselves: every field of every checkpoint, its change stats, and the
log of every path. Each comparison first proves the records were used.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pygit2
import pytest

from rewindfs.store import Layout, Store, checkpoints, project_hash, set_label, stats, take
from rewindfs.store.history import adopt, delete
from rewindfs.store.history.files import pathlog
from rewindfs.store.history.prune import enforce_max_snapshots
from rewindfs.store.history.records import records
from rewindfs.store.maintenance.gc import gc

PATHS = [b"", b"README.md", b"src", b"src/pkg/core.py", b"docs/guide.txt", b"new.txt",
         b"nope"]


def rows(repo: pygit2.Repository, found) -> list[tuple]:
    return [(cp.number, cp.id, cp.time, cp.offset, cp.reason, cp.trailers, cp.tree_id,
             cp.parent_id, cp.labels, cp.root, stats(repo, cp)) for cp in found]


def logs(repo: pygit2.Repository, found) -> dict[bytes, list[tuple]]:
    return {path: [(c.checkpoint.id, c.status, c.added, c.deleted, c.binary)
                   for c in pathlog.log(repo, found, path)] for path in PATHS}


def agree(store: Store, workdir: Path) -> list:
    """Assert the records and the objects say the same of `workdir`'s history; returns it."""
    repo = pygit2.Repository(str(store.layout.store))  # a fresh handle, as a new command
    h16 = project_hash(workdir)
    recorded = checkpoints(repo, h16)
    read = checkpoints(repo, h16, from_objects=True)
    assert recorded and all(cp.record is not None for cp in recorded[:-1]), \
        "the records were not used"
    assert all(cp.record is None for cp in read)
    assert rows(repo, recorded) == rows(repo, read)
    assert logs(repo, recorded) == logs(repo, read)
    return recorded


def record_lines(store: Store, workdir: Path) -> list[bytes]:
    path = records.cache_path(store.layout.store, project_hash(workdir))
    return path.read_bytes().splitlines()


def edit(project: Path, n: int) -> None:
    core = project / "src" / "pkg" / "core.py"
    core.write_text(core.read_text() + f"\n# edit {n}\n")
    (project / "new.txt").write_text(f"new {n}\n")


def test_checkpoints_restores_and_labels(store, project):
    take(store, project, "one")
    edit(project, 1)
    take(store, project, "two")
    agree(store, project)
    before = len(record_lines(store, project))
    edit(project, 2)
    take(store, project, "three")
    (project / "docs" / "guide.txt").unlink()
    take(store, project, "four")
    agree(store, project)
    assert len(record_lines(store, project)) == before + 2, "new commits were appended"

    from rewindfs.restore import restore

    edit(project, 3)  # unsaved work: the restore keeps it in a pre-rollback snapshot
    restore(store, project, "3")
    found = agree(store, project)
    assert found[0].pre_rollback and found[0].number == 0
    set_label(store, project_hash(project), "keep", found[2].id)
    assert agree(store, project)[2].labels == ["keep"]


def test_prune_keeps_labelled_checkpoints_pinned(store, project):
    ids = []
    for n in range(6):
        edit(project, n)
        ids.append(take(store, project, f"c{n}").commit)
    set_label(store, project_hash(project), "old", ids[0])
    agree(store, project)
    repo = pygit2.Repository(str(store.layout.store))
    assert enforce_max_snapshots(repo, store.layout, project_hash(project), 3) == 2
    found = agree(store, project)
    assert [cp.id for cp in found] == [*ids[:2:-1], ids[0]]  # three kept, the label pinned


@pytest.mark.parametrize("which", ["newest", "oldest", "middle"])
def test_delete(store, project, which):
    for n in range(4):
        edit(project, n)
        take(store, project, f"c{n}")
    found = agree(store, project)
    victim = {"newest": found[0], "oldest": found[-1], "middle": found[1]}[which]
    repo = pygit2.Repository(str(store.layout.store))
    done = delete.delete(repo, store.layout, project_hash(project), victim)
    assert done.position == which
    after = agree(store, project)
    assert victim.id not in [cp.id for cp in after]
    assert bool(done.ids_changed) == (which == "middle")


def test_adopt_continues_with_the_moved_history(store, project, tmp_path):
    for n in range(3):
        edit(project, n)
        take(store, project, f"c{n}")
    agree(store, project)
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    adopt.adopt(store, project, moved)
    found = agree(store, moved)
    assert [cp.reason for cp in found] == ["c2", "c1", "c0"]


def test_gc_repacks_and_the_records_are_checked_again(store, project):
    for n in range(3):
        edit(project, n)
        take(store, project, f"c{n}")
    agree(store, project)
    packs_before = record_lines(store, project)[1]
    result = gc(store.layout, immediate=True, wait=True)
    assert result.ran
    agree(store, project)
    assert record_lines(store, project)[1] != packs_before, "the file names the new packs"


def test_a_touched_object_file_is_read_again_and_a_damaged_one_reported(store, project):
    for n in range(3):
        edit(project, n)
        take(store, project, f"c{n}")
    found = agree(store, project)
    loose = store.layout.store / "objects" / found[1].id[:2] / found[1].id[2:]
    assert loose.is_file()
    os.utime(loose, ns=(1, 1))  # git "freshens" objects this way: same bytes
    agree(store, project)
    data = loose.read_bytes()
    loose.chmod(0o644)
    loose.write_bytes(data[: len(data) // 2])
    repo = pygit2.Repository(str(store.layout.store))
    # The history breaks there (store.history.breaks), the records say nothing else.
    from_objects = checkpoints(repo, project_hash(project), from_objects=True)
    recorded = checkpoints(repo, project_hash(project))
    assert from_objects.broken is not None and from_objects.broken.missing == found[1].id
    assert recorded.broken is not None and recorded.broken.missing == found[1].id
    assert str(recorded.broken.damage) == str(from_objects.broken.damage)
    assert [(cp.id, cp.number, cp.past_break) for cp in recorded] \
        == [(cp.id, cp.number, cp.past_break) for cp in from_objects]
    assert [cp.number for cp in recorded] == [1, 0], "numbered down to the break only"


@pytest.mark.parametrize("damage", ["garbage", "crc", "header", "cut"])
def test_a_damaged_records_file_is_ignored_and_rebuilt(store, project, damage):
    for n in range(3):
        edit(project, n)
        take(store, project, f"c{n}")
    agree(store, project)
    path = records.cache_path(store.layout.store, project_hash(project))
    data = path.read_bytes()
    broken = {
        "garbage": os.urandom(len(data)),
        "crc": data.replace(b'"c1"', b'"cX"'),  # a reason changed, its line's CRC not
        "header": b"rewindfs history records v0\n" + data.split(b"\n", 1)[1],
        "cut": data[: len(data) * 2 // 3],
    }[damage]
    assert broken != data
    path.write_bytes(broken)
    found = agree(store, project)
    assert [cp.reason for cp in found] == ["c2", "c1", "c0"]


def test_records_agree_with_hermes_writing_the_same_ref(store, project, home, monkeypatch,
                                                          caplog):
    try:
        import tools.checkpoint_manager as hcm
    except Exception as exc:  # noqa: BLE001 - any import failure: not installed
        pytest.skip(f"hermes-agent is not importable: {type(exc).__name__}: {exc}")
    if shutil.which("git") is None:
        pytest.skip("Hermes's manager needs the git CLI, which is not installed")
    monkeypatch.setattr(hcm, "CHECKPOINT_BASE", home / "checkpoints")
    caplog.set_level(logging.DEBUG, logger="tools.checkpoint_manager")
    hermes = hcm.CheckpointManager(enabled=True, max_snapshots=4)
    take(store, project, "ours")
    agree(store, project)
    for n in range(3):
        hermes.new_turn()
        edit(project, n)
        assert hermes.ensure_checkpoint(str(project), f"hermes {n}") is True
        found = agree(store, project)
        assert found[0].reason == f"hermes {n}"
        edit(project, 10 + n)
        take(store, project, f"ours {n}")
    # Hermes prunes past max_snapshots by rebuilding the kept commits: every id changes.
    hermes.new_turn()
    edit(project, 99)
    assert hermes.ensure_checkpoint(str(project), "hermes prunes") is True
    found = agree(store, project)
    assert len(found) <= 4 and found[0].reason == "hermes prunes"
    assert Store(Layout(home / "checkpoints")).exists()
