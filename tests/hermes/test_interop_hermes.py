"""Interop with the real Hermes Agent checkpoint manager (hermes-agent, tools.checkpoint_manager).

Both tools share one store: checkpoints taken by either must be visible to and usable by
the other, and interleaving them must keep one linear, fsck-clean history.
"""

from __future__ import annotations

import json
import logging
import re

import pygit2
import pytest

from rewindfs.agent.manager import CheckpointManager as RewindManager
from rewindfs.store import checkpoints, project_hash, stats, take


@pytest.fixture
def hermes(hcm, caplog):
    """Hermes's CheckpointManager pointed at the test store."""
    caplog.set_level(logging.DEBUG, logger="tools.checkpoint_manager")
    return hcm.CheckpointManager(enabled=True)


@pytest.fixture
def rewind(home):
    return RewindManager(enabled=True, base=home / "checkpoints")


def ids_on_ref(store_dir, workdir):
    repo = pygit2.Repository(str(store_dir))
    commit = repo.references[f"refs/hermes/{project_hash(workdir)}"].peel(pygit2.Commit)
    out = []
    while commit is not None:
        out.append((str(commit.id), len(commit.parent_ids)))
        commit = commit.parents[0] if commit.parent_ids else None
    return out


def test_default_excludes_identical(store, project, store_dir, hcm):
    take(store, project, "first")
    lines = (store_dir / "info" / "exclude").read_text().splitlines()
    assert [line for line in lines if line and not line.startswith("#")] == \
        hcm.DEFAULT_EXCLUDES


def test_project_hash_identical(project, tmp_path, hcm):
    link = tmp_path / "via-link"
    link.symlink_to(project)
    for path in [project, link, project / "src" / ".."]:
        assert project_hash(path) == hcm._project_hash(str(path))


def test_hermes_checkpoints_listed_by_rewindfs(hermes, rewind, project, store_dir, run_rewind,
                                              fsck):
    assert hermes.ensure_checkpoint(str(project), "before write_file") is True
    hermes.new_turn()
    core = project / "src" / "pkg" / "core.py"
    core.write_text(core.read_text() + "\n\ndef mul(a, b):\n    return a * b\n")
    (project / "docs" / "guide.txt").unlink()
    assert hermes.ensure_checkpoint(str(project), "before patch") is True

    cps = rewind.list_checkpoints(str(project))
    assert [c["reason"] for c in cps] == ["before patch", "before write_file"]
    hermes_view = hermes.list_checkpoints(str(project))
    assert [c["hash"] for c in cps] == [c["hash"] for c in hermes_view]
    # stats agree with Hermes's own (git --shortstat) for the checkpoint that has a parent
    for key in ("files_changed", "insertions", "deletions"):
        assert cps[0][key] == hermes_view[0][key], key
    assert (cps[0]["files_changed"], cps[0]["insertions"], cps[0]["deletions"]) == (2, 4, 3)

    # diff from a Hermes checkpoint to the working tree, through the API and the CLI
    (project / "README.md").write_text("# sample\n\nEdited after.\n")
    result = rewind.diff(str(project), cps[1]["hash"])
    assert result["success"], result
    assert "README.md" in result["stat"] and "+Edited after." in result["diff"]
    assert "def mul" in result["diff"]
    proc = run_rewind("diff", "2", "1", "-C", project, "--name-only", check=True)
    assert sorted(proc.stdout.split()) == ["docs/guide.txt", "src/pkg/core.py"]
    proc = run_rewind("list", project, "--json", check=True)
    assert [c["reason"] for c in json.loads(proc.stdout)] == ["before patch", "before write_file"]
    fsck()


def test_rewindfs_checkpoints_seen_and_restored_by_hermes(hermes, store, project, store_dir,
                                                          fsck):
    first = take(store, project, "rewindfs first")
    core = project / "src" / "pkg" / "core.py"
    original = core.read_bytes()
    core.write_text("broken\n")
    (project / "docs" / "guide.txt").write_text("overwritten\n")
    second = take(store, project, "rewindfs second")
    assert first.taken and second.taken

    listed = hermes.list_checkpoints(str(project))
    assert [c["hash"] for c in listed] == [second.commit, first.commit]
    assert [c["reason"] for c in listed] == ["rewindfs second", "rewindfs first"]
    assert re.fullmatch(r"[0-9a-f]{4,40}", listed[0]["short_hash"])
    assert listed[0]["files_changed"] == 2

    diff = hermes.diff(str(project), first.commit)
    assert diff["success"], diff
    assert "core.py" in diff["stat"]

    # Hermes restores file content from a rewindfs checkpoint
    out = hermes.restore(str(project), first.commit)
    assert out["success"], out
    assert core.read_bytes() == original
    assert (project / "docs" / "guide.txt").read_text() == "line 1\nline 2\nline 3\n"
    # single-file restore too
    core.write_text("broken again\n")
    out = hermes.restore(str(project), first.commit[:10], "src/pkg/core.py")
    assert out["success"], out
    assert core.read_bytes() == original

    # rewindfs sees Hermes's pre-rollback snapshots, linearly on top of its own
    repo = pygit2.Repository(str(store_dir))
    history = checkpoints(repo, project_hash(project))
    assert history[-2:][0].id == second.commit and history[-1].id == first.commit
    assert any(c.reason.startswith("pre-rollback snapshot") for c in history)
    fsck()

    # and rewindfs keeps checkpointing correctly after Hermes touched the project
    (project / "after.txt").write_text("after\n")
    third = take(store, project, "rewindfs after hermes restore")
    assert third.taken
    assert ids_on_ref(store_dir, project)[0][0] == third.commit


def test_interleaved_history_is_linear(hermes, store, project, store_dir, fsck):
    (project / "one.txt").write_text("1\n")
    a = take(store, project, "rewindfs A")
    (project / "two.txt").write_text("2\n")
    assert hermes.ensure_checkpoint(str(project), "hermes B") is True
    (project / "three.txt").write_text("3\n")
    (project / "one.txt").write_text("1 changed\n")
    c = take(store, project, "rewindfs C")
    assert a.taken and c.taken

    chain = ids_on_ref(store_dir, project)
    assert len(chain) == 3
    assert [parents for _, parents in chain] == [1, 1, 0]  # linear, no merges
    assert chain[0][0] == c.commit and chain[2][0] == a.commit
    repo = pygit2.Repository(str(store_dir))
    history = checkpoints(repo, project_hash(project))
    assert [h.reason for h in history] == ["rewindfs C", "hermes B", "rewindfs A"]
    # each step's stats are the change it made
    s_c, s_b = stats(repo, history[0]), stats(repo, history[1])
    assert (s_b.files_changed, s_b.insertions, s_b.deletions) == (1, 1, 0)
    assert (s_c.files_changed, s_c.insertions, s_c.deletions) == (2, 2, 1)
    # Hermes sees the same history
    assert [x["reason"] for x in hermes.list_checkpoints(str(project))] == \
        ["rewindfs C", "hermes B", "rewindfs A"]
    # and a further Hermes checkpoint with no change writes nothing
    hermes.new_turn()
    assert hermes.ensure_checkpoint(str(project), "hermes no-op") is False
    fsck()


def test_hermes_first_then_rewindfs_store(hermes, store, project, store_dir, fsck):
    """Hermes creates the store (its own init); rewindfs adopts it."""
    assert hermes.ensure_checkpoint(str(project), "hermes creates the store") is True
    (project / "x.txt").write_text("x\n")
    result = take(store, project, "rewindfs on a Hermes store")
    assert result.taken
    chain = ids_on_ref(store_dir, project)
    assert len(chain) == 2 and chain[0][0] == result.commit
    fsck()


def test_both_tools_capture_the_same_files(hermes, store, project, tmp_path, store_dir):
    """Same project, captured once by each tool into separate stores: identical trees."""
    (project / ".gitignore").write_text("*.tmp\n")
    (project / "a.tmp").write_text("t\n")
    (project / "node_modules" / "m").mkdir(parents=True)
    (project / "node_modules" / "m" / "i.js").write_text("m\n")
    (project / ".env").write_text("SECRET=1\n")
    (project / "app.log").write_text("log\n")
    (project / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    (project / "run.sh").write_text("#!/bin/sh\n")
    (project / "run.sh").chmod(0o755)
    (project / "link").symlink_to("README.md")
    assert hermes.ensure_checkpoint(str(project), "hermes") is True
    repo = pygit2.Repository(str(store_dir))
    hermes_tree = str(repo.references[f"refs/hermes/{project_hash(project)}"]
                      .peel(pygit2.Commit).tree_id)

    from rewindfs.store import Layout, Store

    other_store = Store(Layout(tmp_path / "other-home" / "checkpoints"))
    result = take(other_store, project, "rewindfs")
    other = pygit2.Repository(str(tmp_path / "other-home" / "checkpoints" / "store"))
    assert str(other[result.commit].peel(pygit2.Commit).tree_id) == hermes_tree


def test_hermes_prune_and_gc_keep_rewindfs_working(hcm, store, project, store_dir, fsck):
    """Hermes's max_snapshots pruning rewrites the ref and runs `git gc --prune=now`
    (which runs `git worktree prune`): rewindfs's per-project admin dir must survive
    and later checkpoints must still work."""
    for i in range(3):
        (project / f"r{i}.txt").write_text(f"{i}\n")
        assert take(store, project, f"rewindfs {i}").taken
    small = hcm.CheckpointManager(enabled=True, max_snapshots=2)
    (project / "h.txt").write_text("h\n")
    assert small.ensure_checkpoint(str(project), "hermes prunes") is True
    h16 = project_hash(project)
    assert (store_dir / "worktrees" / h16 / "HEAD").exists(), "git worktree prune removed it"
    repo = pygit2.Repository(str(store_dir))
    assert [c.reason for c in checkpoints(repo, h16)] == ["hermes prunes", "rewindfs 2"]
    (project / "later.txt").write_text("later\n")
    later = take(store, project, "rewindfs after gc")
    assert later.taken
    repo = pygit2.Repository(str(store_dir))
    assert [c.reason for c in checkpoints(repo, h16)][:2] == ["rewindfs after gc",
                                                             "hermes prunes"]
    fsck()
