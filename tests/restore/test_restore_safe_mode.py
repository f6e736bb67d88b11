"""Safe mode: a harness-initiated full restore reverts what the agent wrote and keeps what a
person edited since (the agent-write ledger decides)."""

from __future__ import annotations

import json

import pytest
from test_restore_helpers import checkpoint, git_view, write


@pytest.fixture
def session(mgr, project):
    """Checkpoint; the agent writes, creates and deletes; then a person edits one of the
    agent's files and one file the agent never touched. Returns the checkpoint id."""
    write(project, {"a.txt": "a original\n", "b.txt": "b original\n", "c.txt": "c original\n",
                    "mine.txt": "mine original\n"})
    cp = checkpoint(mgr, project, "before the agent's turn", trailers={"Rewind-Turn": "t1"})
    wd = str(project)
    # the agent's tools
    (project / "a.txt").write_text("a by agent\n")
    assert mgr.record_agent_write(wd, "a.txt")
    (project / "b.txt").write_text("b by agent\n")
    assert mgr.record_agent_write(wd, str(project / "b.txt"))  # absolute inside: accepted
    (project / "c.txt").unlink()
    assert mgr.record_agent_write(wd, "c.txt")  # recorded after deleting
    write(project, {"src/gen/agent_new.py": "created by agent\n"})
    assert mgr.record_agent_write(wd, "src/gen/agent_new.py")
    # a person, afterwards
    (project / "b.txt").write_text("b fixed by the person\n")
    (project / "mine.txt").write_text("mine edited by the person\n")
    return cp


def test_safe_restore_keeps_the_persons_edits(session, project, mgr):
    out = mgr.restore(str(project), session, safe=True)
    assert out["success"], out
    assert out["safe"] is True
    assert out["skipped_user_edits"] == ["b.txt", "mine.txt"]  # a person changed them
    assert out["kept_not_agent"] == ["mine.txt"]
    assert (project / "a.txt").read_text() == "a original\n"
    assert (project / "b.txt").read_text() == "b fixed by the person\n"
    assert (project / "c.txt").read_text() == "c original\n"  # the agent deleted it
    assert not (project / "src/gen").exists()  # the agent created it
    assert (project / "mine.txt").read_text() == "mine edited by the person\n"
    assert out["restored_files"] == ["a.txt", "c.txt", "src/gen/agent_new.py"]
    assert out["deleted_files"] == ["src/gen/agent_new.py"]
    assert out["turn_id"] == "t1"


def test_cli_safe_by_default_with_ledger_reports_kept_edits(session, project, run_rewind):
    proc = run_rewind("restore", session[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "kept your edits: b.txt" in proc.stdout
    assert "mine.txt" in proc.stdout and "--all" in proc.stdout
    # the CLI chose safe mode by itself, and says so in one line
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("rewind: note: safe restore") and "--all" in proc.stderr
    assert (project / "b.txt").read_text() == "b fixed by the person\n"
    assert (project / "a.txt").read_text() == "a original\n"


def test_cli_dry_run_shows_kept_edits(session, project, run_rewind):
    proc = run_rewind("restore", session[:8], "--dry-run", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["skipped_user_edits"] == ["b.txt", "mine.txt"]
    assert data["plan"]["kept_user_edits"] == 1 and data["plan"]["kept_not_agent"] == 1
    assert (project / "a.txt").read_text() == "a by agent\n"


def test_all_restores_everything(session, project, run_rewind, files_of):
    proc = run_rewind("restore", session[:8], "--all", "--yes", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["safe"] is False and "skipped_user_edits" not in data
    assert "note" not in proc.stderr
    assert git_view(project) == files_of(session)
    # and the person's edit is still one undo away
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "b.txt").read_text() == "b fixed by the person\n"
    assert (project / "mine.txt").read_text() == "mine edited by the person\n"


def test_path_restores_are_not_safe_mode(session, project, mgr):
    out = mgr.restore(str(project), session, file_path="b.txt", safe=True)
    assert out["success"], out
    assert out["safe"] is False
    assert (project / "b.txt").read_text() == "b original\n"


def test_ledger_entries_before_the_checkpoint_do_not_count(mgr, project, files_of):
    checkpoint(mgr, project, "first")
    (project / "a.txt").write_text("agent, long ago\n")
    assert mgr.record_agent_write(str(project), "a.txt")
    import time

    time.sleep(1.05)  # checkpoint times have one-second resolution
    cp = checkpoint(mgr, project, "later")
    (project / "a.txt").write_text("person\n")
    out = mgr.restore(str(project), cp)
    assert out["success"] and out["safe"] is False
    assert git_view(project) == files_of(cp)


def test_record_agent_write_rejects_paths_outside(mgr, project, tmp_path):
    assert mgr.record_agent_write(str(project), "../elsewhere.txt") is False
    assert mgr.record_agent_write(str(project), str(tmp_path / "x.txt")) is False
    assert mgr.record_agent_write(str(project), str(project)) is False


def test_record_agent_write_before_the_first_checkpoint(mgr, project, files_of):
    """A harness may record a write before rewindfs ever checkpointed the project (the
    first checkpoint was skipped, or Hermes took it): checkpoints and restores must keep
    working, and the write must count for safe mode."""
    (project / "a.txt").write_text("agent wrote this first\n")
    assert mgr.record_agent_write(str(project), "a.txt")
    result = mgr.take(str(project), "first checkpoint after a recorded write")
    assert result.taken
    (project / "README.md").write_text("agent again\n")
    assert mgr.record_agent_write(str(project), "README.md")
    out = mgr.restore(str(project), result.commit)
    assert out["success"], out
    assert git_view(project) == files_of(result.commit)
