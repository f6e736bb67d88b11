"""`rewind status` from its remembered answers (store.maintenance.liveset) says what git says.

After each writer (checkpoints in two projects sharing a file, a label pinned past a
prune, delete, agent state notes, a blob staged and never committed, gc, Hermes's own
manager writing the same ref), the counts, the bytes only each project holds and the
reclaimable bytes equal what git computes from scratch: `rev-list --objects` of each
project's refs for ownership, `rev-list --disk-usage --all --indexed-objects` for what
is live. Each status is taken twice: the second answers from caches/status.json
(proved by its state being unchanged), and must say the same.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from pathlib import Path

import pygit2
import pytest
from conftest import isolated_git_env

from rewindfs.store import checkpoints, project_hash, set_label, take
from rewindfs.store.history import delete
from rewindfs.store.history.metadata import carrying, notes
from rewindfs.store.history.prune import enforce_max_snapshots
from rewindfs.store.maintenance import liveset
from rewindfs.store.maintenance.gc import gc
from rewindfs.store.maintenance.status import store_status

PACK_FRAME = 32


def git(store_dir: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], env=isolated_git_env(GIT_DIR=str(store_dir)),
                          input=stdin, capture_output=True, check=True).stdout.decode()


def from_git(store_dir: Path) -> tuple[dict[str, int], dict[str, int], int]:
    """(counts, bytes only each project holds, reclaimable bytes), computed by git now."""
    repo = pygit2.Repository(str(store_dir))
    refs = list(repo.references)
    hashes = [r.split("/")[-1] for r in refs if r.startswith("refs/hermes/")]
    counts = {h: len(checkpoints(repo, h, from_objects=True)) for h in hashes}
    owner: dict[str, str] = {}
    for h in hashes:
        mine = [r for r in refs if r == f"refs/hermes/{h}" or
                r.startswith(f"refs/rewind/labels/{h}/")]
        listed = git(store_dir, "rev-list", "--objects", "--no-object-names", *mine)
        kinds = git(store_dir, "cat-file", "--batch-check=%(objectname) %(objecttype)",
                    stdin=listed.encode())
        for line in kinds.splitlines():
            oid, kind = line.split()
            if kind == "blob":
                owner[oid] = h if owner.get(oid, h) == h else ""
    sizes = git(store_dir, "cat-file", "--batch-check=%(objectname) %(objectsize:disk)",
                stdin="".join(f"{o}\n" for o in owner).encode())
    exclusive = dict.fromkeys(hashes, 0)
    for line in sizes.splitlines():
        oid, size = line.split()
        if owner[oid]:
            exclusive[owner[oid]] += int(size)
    live = int(git(store_dir, "rev-list", "--objects", "--disk-usage", "--all",
                   "--indexed-objects"))
    objects = store_dir / "objects"
    stored = sum(p.stat().st_size - PACK_FRAME for p in (objects / "pack").glob("*.pack"))
    stored += sum(p.stat().st_size for p in objects.glob("??/*") if len(p.name) == 38)
    return counts, exclusive, max(0, stored - live)


def says(layout) -> tuple[dict[str, int], dict[str, int], int]:
    info = store_status(layout, 7)
    return ({p.hash: p.checkpoints for p in info.projects},
            {p.hash: p.size_bytes for p in info.projects}, info.reclaimable_bytes)


def agree(store) -> None:
    layout = store.layout
    expected = from_git(layout.store)
    first = says(layout)
    state = json.loads((layout.store / "caches" / liveset.SUMMARY).read_text())["state"]
    second = says(layout)
    assert json.loads((layout.store / "caches" / liveset.SUMMARY).read_text())["state"] == state
    assert first == expected
    assert second == expected


@pytest.fixture
def two(store, project, tmp_path):
    """Two projects sharing one file's bytes, each with a few checkpoints."""
    other = tmp_path / "other"
    shutil.copytree(project, other)
    for n in range(3):
        for root in (project, other):
            (root / "shared.txt").write_text(f"shared {n}\n" * 50)
            (root / f"own{n}.txt").write_text(f"{root.name} {n}\n" * 30)
            take(store, root, f"c{n}")
    return project, other


def test_checkpoints_labels_prune_and_delete(store, two):
    project, other = two
    agree(store)
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    set_label(store, h16, "first", checkpoints(repo, h16)[-1].id)
    (project / "more.txt").write_text("more\n" * 100)
    take(store, project, "more")
    agree(store)
    enforce_max_snapshots(repo, store.layout, h16, 2)  # the label keeps its checkpoint
    agree(store)
    found = checkpoints(repo, project_hash(other))
    delete.delete(repo, store.layout, project_hash(other), found[1])
    agree(store)


def test_labels_of_a_project_without_its_ref(store, two):
    """A project's labels outlive its ref (Kilo's imported steps are labels; a ref deleted
    by hand): their objects are live like any other ref's."""
    _, other = two
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(other)
    set_label(store, h16, "keep", checkpoints(repo, h16)[0].id)
    repo.references.delete(f"refs/hermes/{h16}")
    expected = from_git(store.layout.store)
    for _ in range(2):  # measured, then from caches/status.json
        assert store_status(store.layout, 7).reclaimable_bytes == expected[2]


def test_notes_staged_blobs_and_gc(store, two):
    project, _ = two
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    (project / "planned.txt").write_text("next\n")
    carrying.take_carrying(store, project, "with state", state={"plan": "x" * 500})
    assert notes.read(repo, h16, checkpoints(repo, h16)[0].id)  # a notes ref now
    agree(store)
    index_path = store.layout.worktree_admin(h16) / "index"
    index = pygit2.Index(str(index_path))
    blob = repo.create_blob(b"staged, never committed\n" * 40)
    index.add(pygit2.IndexEntry("staged.txt", blob, pygit2.enums.FileMode.BLOB))
    index.write()
    agree(store)
    assert gc(store.layout, immediate=True, wait=True).ran
    agree(store)


def test_hermes_writing_the_same_ref(store, two, home, monkeypatch, caplog):
    try:
        import tools.checkpoint_manager as hcm
    except Exception as exc:  # noqa: BLE001 - any import failure: not installed
        pytest.skip(f"hermes-agent is not importable: {type(exc).__name__}: {exc}")
    if shutil.which("git") is None:
        pytest.skip("Hermes's manager needs the git CLI, which is not installed")
    project, _ = two
    agree(store)
    monkeypatch.setattr(hcm, "CHECKPOINT_BASE", home / "checkpoints")
    caplog.set_level(logging.DEBUG, logger="tools.checkpoint_manager")
    hermes = hcm.CheckpointManager(enabled=True, max_snapshots=3)
    for n in range(3):
        hermes.new_turn()
        (project / "hermes.txt").write_text(f"hermes {n}\n" * 20)
        assert hermes.ensure_checkpoint(str(project), f"hermes {n}") is True
        agree(store)
