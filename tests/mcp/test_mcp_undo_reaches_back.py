"""MCP `undo` walks back past a restore that changed nothing, as `rewind undo` does (issue
41, case 1): the real `rewind mcp` over stdio (tests/mcp/mcpclient), the restores made by
the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcpclient import Server

pytestmark = pytest.mark.long  # the server's start (the SDK's import: ~1 s)


def test_mcp_undo_takes_back_the_restore_before_one_that_changed_nothing(
        project: Path, child_env, run_rewind) -> None:
    run_rewind("checkpoint", "-m", "one", cwd=project, check=True)
    (project / "b.txt").write_text("important\n")
    run_rewind("restore", "1", "--yes", cwd=project, check=True)  # deletes b.txt
    again = run_rewind("restore", "1", "--yes", cwd=project, check=True)
    assert "0 file(s) written, 0 deleted" in again.stdout, again.stdout
    with Server(child_env(), project, "--allow-restore") as srv:
        undone = srv.call("undo")
    assert "Undid the last restore" in undone, undone
    assert (project / "b.txt").read_text() == "important\n"


def test_mcp_restore_counts_a_moved_folder_once(project: Path, child_env,
                                                run_rewind) -> None:
    """With max_files 100, 60 files and `mv src lib` (50 files): MCP's restore (its
    pre-rollback snapshot first) is not refused as "more than 100 files" (issue 41,
    case 2: the walk counted the moved files twice)."""
    (project / "src").mkdir(exist_ok=True)
    for i in range(50):
        (project / "src" / f"m{i}.py").write_text(f"{i}\n")
    for i in range(10):
        (project / f"top{i}.txt").write_text(f"{i}\n")
    env = {"REWIND_MAX_FILES": "100"}
    assert sum(1 for p in project.rglob("*") if p.is_file()) < 100
    run_rewind("checkpoint", "-m", "one", cwd=project, env=env, check=True)
    (project / "src").rename(project / "lib")
    with Server(child_env(**env), project, "--allow-restore") as srv:
        restored = srv.call("restore", ref="1")
    assert "Restored" in restored and "more than 100" not in restored, restored
    assert (project / "src" / "m0.py").read_text() == "0\n"
    assert not (project / "lib").exists()
