"""Restoring checkpoints written by Hermes 0.19's own CheckpointManager in the same store,
and restores while a project sits at max_snapshots."""

from __future__ import annotations

import json

import pytest
from test_restore_helpers import (
    chain,
    checkpoint,
    git_view,
    manager,
    picture,
    without_empty_dirs,
    write,
)


@pytest.fixture
def hermes_factory(hcm):
    return lambda **kw: hcm.CheckpointManager(enabled=True, **kw)


def hermes_checkpoint(hermes, project, reason):
    hermes.new_turn()
    assert hermes.ensure_checkpoint(str(project), reason) is True, reason
    return hermes.list_checkpoints(str(project))[0]["hash"]


def test_restore_to_hermes_checkpoints(hermes_factory, project, run_rewind, files_of,
                                       store_dir, fsck):
    hermes = hermes_factory()
    first = hermes_checkpoint(hermes, project, "hermes: before write_file")
    (project / "src/pkg/core.py").write_text("broken by the agent\n")
    (project / "docs/guide.txt").unlink()
    write(project, {"src/pkg/agent_new.py": "new\n", "scratch/tmp.txt": "scratch\n"})
    second = hermes_checkpoint(hermes, project, "hermes: before patch")
    (project / "README.md").write_text("edited after\n")
    before = picture(project)

    proc = run_rewind("restore", first[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git_view(project) == files_of(first)
    assert not (project / "scratch").exists()  # Hermes 0.19 would have left these behind
    assert not (project / "src/pkg/agent_new.py").exists()

    # Hermes sees our pre-rollback snapshot on top of its own checkpoints
    listed = hermes.list_checkpoints(str(project))
    assert listed[0]["reason"] == f"pre-rollback snapshot (restoring to {first[:8]})"
    assert [c["hash"] for c in listed[1:3]] == [second, first]
    # a single file from Hermes's second checkpoint, through the API
    out = manager(store_dir.parent.parent).restore(str(project), second[:10],
                                                    "src/pkg/core.py")
    assert out["success"], out
    assert (project / "src/pkg/core.py").read_text() == "broken by the agent\n"

    proc = run_rewind("undo", cwd=project)  # undoes the single-file restore
    assert proc.returncode == 0, proc.stderr
    assert git_view(project) == files_of(first)
    proc = run_rewind("undo", cwd=project)  # undo of the undo: the file restore again
    assert proc.returncode == 0, proc.stderr
    assert (project / "src/pkg/core.py").read_text() == "broken by the agent\n"
    # Hermes keeps checkpointing on top, and the store stays consistent
    (project / "after.txt").write_text("after\n")
    hermes_checkpoint(hermes, project, "hermes: later")
    fsck()
    # the state before the full restore is still there to go back to
    pre = [c for c in hermes.list_checkpoints(str(project))
           if c["reason"] == f"pre-rollback snapshot (restoring to {first[:8]})"]
    out = manager(store_dir.parent.parent).restore(str(project), pre[-1]["hash"])
    assert out["success"], out
    now = {k: v for k, v in picture(project).items() if k != b"after.txt"}
    assert without_empty_dirs(now) == without_empty_dirs(before)  # docs/: see test_restore_full


def test_undo_restores_state_before_restoring_to_hermes_checkpoint(hermes_factory, project,
                                                                  run_rewind):
    hermes = hermes_factory()
    first = hermes_checkpoint(hermes, project, "hermes one")
    (project / "README.md").write_text("two\n")
    (project / "added.txt").write_text("added\n")
    before = picture(project)
    proc = run_rewind("restore", first, "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert picture(project) == before


def test_restore_at_max_snapshots_hermes(hermes_factory, project, run_rewind, files_of,
                                         store_dir):
    """Hermes (max_snapshots=3) prunes by rewriting its kept commits; restore to the oldest
    listed one, and that id must keep working afterwards."""
    hermes = hermes_factory(max_snapshots=3)
    for i in range(5):
        write(project, {"counter.txt": f"{i}\n", f"step{i}.txt": f"{i}\n"})
        hermes_checkpoint(hermes, project, f"hermes step {i}")
    listed = hermes.list_checkpoints(str(project))
    assert len(listed) == 3
    oldest = listed[-1]["hash"]
    assert listed[-1]["reason"] == "hermes step 2"
    write(project, {"counter.txt": "edited\n"})

    proc = run_rewind("restore", oldest[:8], "--yes", "--json", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["hash"] == oldest
    assert git_view(project) == files_of(oldest)
    assert not (project / "step3.txt").exists()
    # the target is still listed and usable by id, by the CLI and the API
    proc = run_rewind("list", "--json", cwd=project)
    assert oldest in [c["hash"] for c in json.loads(proc.stdout)]
    write(project, {"counter.txt": "edited again\n"})
    out = manager(store_dir.parent.parent).restore(str(project), oldest)
    assert out["success"], out
    assert git_view(project) == files_of(oldest)
    proc = run_rewind("diff", oldest[:8], cwd=project)
    assert proc.returncode == 0, proc.stderr
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "counter.txt").read_text() == "edited again\n"


def test_restore_at_max_snapshots_rewindfs(home, project, run_rewind, files_of, store_dir):
    mgr = manager(home, max_snapshots=3)
    ids = []
    for i in range(5):
        write(project, {"counter.txt": f"{i}\n", f"step{i}.txt": f"{i}\n"})
        ids.append(checkpoint(mgr, project, f"step {i}"))
    listed = mgr.list_checkpoints(str(project))
    assert [c["hash"] for c in listed] == ids[:1:-1]  # newest three
    oldest = ids[2]
    write(project, {"counter.txt": "edited\n"})
    out = mgr.restore(str(project), oldest)
    assert out["success"], out
    assert git_view(project) == files_of(oldest)
    # the target and the pre-rollback snapshot are both listed and usable by id
    hashes = [c["hash"] for c in mgr.list_checkpoints(str(project))]
    assert oldest in hashes and out["pre_rollback"] in hashes
    write(project, {"counter.txt": "edited again\n"})
    proc = run_rewind("restore", oldest[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git_view(project) == files_of(oldest)
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "counter.txt").read_text() == "edited again\n"
    assert chain(store_dir, project)  # the ref is intact


def test_record_agent_write_on_a_hermes_project(hermes_factory, home, project, files_of):
    """Hermes takes the checkpoints, a harness uses rewindfs for the write ledger and the
    restore: the restore must work (and be safe)."""
    hermes = hermes_factory()
    cp = hermes_checkpoint(hermes, project, "hermes: before the turn")
    mgr = manager(home)
    (project / "README.md").write_text("by the agent\n")
    assert mgr.record_agent_write(str(project), "README.md")
    (project / "docs/guide.txt").write_text("by a person\n")
    out = mgr.restore(str(project), cp, safe=True)
    assert out["success"], out
    assert (project / "README.md").read_bytes() == files_of(cp)[b"README.md"][1]
    assert (project / "docs/guide.txt").read_text() == "by a person\n"
    assert out["skipped_user_edits"] == out["kept_not_agent"] == ["docs/guide.txt"]
