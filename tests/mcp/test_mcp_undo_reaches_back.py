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
