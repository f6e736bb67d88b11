"""Deep trees are data, not stack frames (issue 34, case 5); a restore refused after its
pre-rollback snapshot records nothing that keeps undo from the restore before it (issue 41).

The 20,000-level tree is written into the project's own ref by plain git (`git
fast-import` into the store), as any process able to write the store could."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import isolated_git_env

from rewindfs import restore as rs
from rewindfs.errors import Refused
from rewindfs.store import Layout, Store, project_hash

DEEP = 20_000


def deep_checkpoint(store_dir: Path, workdir: Path) -> str:
    """A checkpoint on top of the project's newest, holding a file 20,000 levels down."""
    ref = f"refs/hermes/{project_hash(workdir)}"
    env = isolated_git_env(GIT_DIR=str(store_dir))
    tip = subprocess.run(["git", "rev-parse", ref], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    path = "/".join(["d"] * DEEP) + "/f"
    stream = (f"commit {ref}\ncommitter x <x@x> 1700000000 +0000\ndata 4\ndeep\n"
              f"from {tip}\nM 100644 inline {path}\ndata 5\ndeep\n\n").encode()
    subprocess.run(["git", "fast-import", "--quiet", "--force"], input=stream, env=env,
                   check=True, capture_output=True, timeout=300)
    return subprocess.run(["git", "rev-parse", ref], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_tree_20000_levels_deep_is_read_and_refused_in_one_line(project: Path, run_rewind,
                                                                 store_dir: Path,
                                                                 tmp_path: Path):
    run_rewind("checkpoint", str(project), "-m", "first")
    deep_checkpoint(store_dir, project)
    for args in (["list"], ["list", "--json"], ["show", "1"], ["grep", "deep"],
                 ["log", "/".join(["d"] * DEEP) + "/f"], ["diff", "2", "1", "--stat"]):
        done = run_rewind(*args, cwd=str(project), check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args[0], done.stderr)
    before = sorted(p.name for p in project.iterdir())
    count = len(json.loads(run_rewind("list", "--json", cwd=str(project)).stdout))
    for args in (["restore", "1", "--to", str(tmp_path / "out")], ["restore", "1", "--yes"],
                 ["restore", "1", "--dry-run"]):
        done = run_rewind(*args, cwd=str(project), check=False)
        assert done.returncode == 1, (args, done.stderr)
        line = done.stderr.strip()
        assert "\n" not in line and "more than 100 levels deep" in line, line
        assert "Traceback" not in done.stderr
    assert sorted(p.name for p in project.iterdir()) == before
    assert not (tmp_path / "out").exists()
    # Refused before its pre-rollback snapshot: nothing to undo, nothing new listed.
    assert len(json.loads(run_rewind("list", "--json", cwd=str(project)).stdout)) == count


def test_a_restore_refused_after_its_pre_rollback_snapshot_does_not_block_undo(
        project: Path, home: Path):
    """An earlier restore, then one refused after its pre-rollback snapshot was taken (a
    deletion nobody confirmed): the refused one records nothing in the journal, so
    `undo` takes back the earlier restore (issue 41, case 1)."""
    store = Store(Layout.for_home(home))
    from rewindfs import CheckpointManager
    from rewindfs.restore import journal
    from rewindfs.restore.plan import Plan

    mgr = CheckpointManager(enabled=True, base=store.layout.base)
    (project / "app.py").write_text("print('first')\n")
    mgr.new_turn()
    mgr.ensure_checkpoint(str(project), "first")
    (project / "app.py").write_text("print('edited')\n")
    mgr.new_turn()
    mgr.ensure_checkpoint(str(project), "edited")
    rs.restore(store, project, "2")  # the earlier restore: app.py back
    assert "edited" not in (project / "app.py").read_text()
    jpath = journal.path_for(store.layout, project_hash(project))
    recorded = len(journal.entries(jpath))
    (project / "later.txt").write_text("a file the next restore deletes\n")
    with pytest.raises(Refused, match="did not confirm"):
        rs.restore(store, project, "2", rs.Options(confirmed=Plan()))
    assert (project / "later.txt").exists()
    assert len(journal.entries(jpath)) == recorded  # the refusal recorded nothing
    rs.undo(store, project)
    assert (project / "app.py").read_text() == "print('edited')\n"  # the earlier one undone
    assert (project / "later.txt").exists()
