"""A harness written for upstream Hermes runs on rewindfs when only its import changes.

tests/hermes/hermes_harness.py uses upstream Hermes's tools.checkpoint_manager
(hermes-agent 0.19) and nothing it lacks. Each sequence here runs twice, on real
stores: once on the harness as written, against upstream Hermes itself, and once on
the same source with that one import line pointed at rewindfs.hermes. The same
assertions hold for both, so a harness that works with Hermes works with rewindfs:
the agent loop (write tools, shell commands, /rollback, /rollback diff) and the
maintenance a harness runs (startup auto-prune, status, prune, clear-legacy, clear).
"""

from __future__ import annotations

import os
import shutil
import types
from pathlib import Path

import pytest
from conftest import upstream_hermes

import rewindfs.hermes

HARNESS = Path(__file__).with_name("hermes_harness.py")
UPSTREAM = "tools.checkpoint_manager"
UPSTREAM_IMPORT = f"from {UPSTREAM} import ("
CONFIG = {"enabled": True, "max_snapshots": 20, "max_total_size_mb": 500,
          "max_file_size_mb": 1, "auto_prune": True, "retention_days": 7,
          "min_interval_hours": 24, "delete_orphans": True}


def load_harness(module: str) -> types.ModuleType:
    """The harness's source with its one import of Hermes pointed at `module`."""
    source = HARNESS.read_text()
    assert source.count(UPSTREAM_IMPORT) == 1 and source.count(UPSTREAM) == 2
    changed = source.replace(UPSTREAM_IMPORT, f"from {module} import (")
    assert changed.count("\n") == source.count("\n")  # that line and nothing else
    harness = types.ModuleType("hermes_harness_on_" + module.replace(".", "_"))
    exec(compile(changed, str(HARNESS), "exec"), harness.__dict__)  # noqa: S102 - test data
    return harness


@pytest.fixture(params=["upstream Hermes", "rewindfs"])
def harness(request, home, monkeypatch):
    """The harness on upstream Hermes (as written) or on rewindfs (import changed)."""
    if request.param == "upstream Hermes":
        module = upstream_hermes()
        name = UPSTREAM
    else:
        module, name = rewindfs.hermes, "rewindfs.hermes"
    monkeypatch.setattr(module, "CHECKPOINT_BASE", home / "checkpoints")
    loaded = load_harness(name)
    assert loaded.CheckpointManager is module.CheckpointManager  # really runs on it
    return loaded


@pytest.fixture
def repo(tmp_path):
    """A project with a marker, as agents meet them."""
    root = tmp_path / "work" / "app"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "README.md").write_text("# app\n")
    (root / "data.csv").write_text("a,b\n1,2\n")
    return root


def test_agent_loop_sequence(harness, repo):
    agent = harness.Agent(CONFIG)
    cwd = str(repo)
    app, readme, data = repo / "src" / "app.py", repo / "README.md", repo / "data.csv"

    agent.turn()
    agent.write_file(str(app), "def main():\n    return 2\n")
    agent.write_file(str(repo / "src" / "helper.py"), "X = 1\n")  # same turn: no checkpoint
    agent.write_file(str(data), "x,y\n" * 1000)
    readme.write_text("# app\n\nA person's notes.\n")  # a person, meanwhile

    agent.turn()
    assert agent.terminal(cwd, "rm src/helper.py") == 0  # the agent deletes its own file
    assert agent.reasons(cwd) == ["before terminal: rm src/helper.py", "before write_file"]

    listing = agent.rollback(cwd).splitlines()  # the wording around the list is each's own
    for number, cp in enumerate(agent.mgr.list_checkpoints(cwd), start=1):
        assert [line for line in listing if line.strip().startswith(f"{number}.")
                and cp["short_hash"] in line and cp["reason"] in line], (number, listing)
    assert "+    return 2" in agent.rollback_diff(cwd, 2)

    reply = agent.rollback(cwd, "2")  # back to before the first write
    assert reply.startswith("restored to ") and reply.endswith("(before write_file)")
    assert app.read_text() == "def main():\n    return 1\n"
    assert data.read_text() == "a,b\n1,2\n"
    assert readme.read_text() == "# app\n"  # a whole restore takes the person's edit back
    reasons = agent.reasons(cwd)
    assert reasons[0].startswith("pre-rollback snapshot (restoring to ") and len(reasons) == 3

    agent.turn()
    readme.write_text("# app\n\nnew notes\n")
    reply = agent.rollback(cwd, "1", file="README.md")  # the pre-rollback snapshot's copy
    assert reply.startswith("restored to ")
    assert readme.read_text() == "# app\n\nA person's notes.\n"
    assert app.read_text() == "def main():\n    return 1\n"  # one file only

    assert agent.rollback(cwd, "9") == f"pick 1-{len(agent.reasons(cwd))}"
    assert agent.rollback(cwd, "deadbeef") == "restore failed: Checkpoint 'deadbeef' not found"
    reply = agent.rollback(cwd, "1", file="../outside.txt")
    assert reply.startswith("restore failed: ") and "escapes the working directory" in reply

    other = repo.parent / "lib"
    other.mkdir()
    (other / "Makefile").write_text("all:\n")
    agent.turn()
    agent.write_file(str(other / "lib.c"), "int f;\n")
    assert agent.reasons(str(other)) == ["before write_file"]
    assert "before terminal: rm src/helper.py" in agent.reasons(cwd)


def test_maintenance_sequence(harness, repo, home):
    base = home / "checkpoints"
    agent = harness.Agent(CONFIG)
    agent.turn()
    agent.write_file(str(repo / "src" / "app.py"), "changed\n")
    doomed = repo.parent / "scratch"
    doomed.mkdir()
    (doomed / "Cargo.toml").write_text("[package]\n")
    agent.turn()
    agent.write_file(str(doomed / "main.rs"), "fn main() {}\n")
    archive = base / "legacy-20200101-000000"
    archive.mkdir()
    (archive / "old").write_bytes(b"o" * 2048)
    os.utime(archive, (1, 1))

    status = harness.cmd_status()
    assert status[0] == "2 project(s)"
    assert f"{repo}: 1 checkpoint(s)" in status and f"{doomed}: 1 checkpoint(s)" in status
    assert "archive legacy-20200101-000000" in status

    # rewindfs counts a store it creates as swept (docs/maintenance.md); Hermes sweeps on
    # its first start. Once the marker is gone, both sweep now, and not again too soon.
    (base / ".last_prune").unlink(missing_ok=True)
    started = harness.on_startup(CONFIG)
    assert started["skipped"] is False and started["result"]["deleted_stale"] == 1
    assert not archive.exists()  # the stale archive went with the sweep
    assert harness.on_startup(CONFIG) == {"skipped": True}  # swept within the interval

    shutil.rmtree(doomed)
    assert f"{doomed}: 1 checkpoint(s) (missing)" in harness.cmd_status()
    report = harness.cmd_prune(7, keep_orphans=True)
    assert report["deleted_orphan"] == 0
    report = harness.cmd_prune(7, keep_orphans=False)
    assert report["deleted_orphan"] == 1 and report.get("errors", 0) == 0
    assert harness.cmd_status()[:2] == ["1 project(s)", f"{repo}: 1 checkpoint(s)"]

    (base / "legacy-20240101-000000").mkdir()
    assert harness.cmd_clear_legacy().startswith("deleted ")
    assert not [p for p in base.iterdir() if p.name.startswith("legacy-")]
    assert harness.cmd_clear() == "cleared: True"
    assert not base.exists()
    assert harness.cmd_clear() == "cleared: False"
