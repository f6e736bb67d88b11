"""A harness written for upstream Hermes runs on rewindfs when only its import changes.

tests/hermes/hermes_harness.py imports tools.checkpoint_manager as current Hermes's harnesses
do; here its source is loaded with that one import line pointed at rewindfs.hermes,
and both of its call sequences are driven on real stores: the agent loop (write
tools, shell commands, /rollback, /diff session) and the maintenance a harness runs
(startup auto-prune, status, prune with a confirmation, clear-legacy, clear).
"""

from __future__ import annotations

import os
import shutil
import types
from pathlib import Path

import pytest

import rewindfs.hermes as hermes

HARNESS = Path(__file__).with_name("hermes_harness.py")
UPSTREAM_IMPORT = "from tools.checkpoint_manager import ("
CONFIG = {"enabled": True, "max_snapshots": 20, "max_total_size_mb": 500,
          "max_file_size_mb": 1, "auto_prune": True, "retention_days": 7,
          "min_interval_hours": 24, "delete_orphans": True}


def load_harness(module: str) -> types.ModuleType:
    source = HARNESS.read_text()
    assert source.count(UPSTREAM_IMPORT) == 1 and source.count("tools.checkpoint_manager") == 2
    changed = source.replace(UPSTREAM_IMPORT, f"from {module} import (")
    harness = types.ModuleType("hermes_harness_on_" + module.replace(".", "_"))
    exec(compile(changed, str(HARNESS), "exec"), harness.__dict__)  # noqa: S102 - test data
    return harness


@pytest.fixture
def harness(home, monkeypatch):
    monkeypatch.setattr(hermes, "CHECKPOINT_BASE", home / "checkpoints")
    return load_harness("rewindfs.hermes")


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
    agent.write_file(str(repo / "src" / "helper.py"), "X = 1\n")
    agent.write_file(str(data), b"x,y\n" * 400_000)  # grows past the 1 MB cap
    readme.write_text("# app\n\nA person's notes.\n")  # a person, meanwhile

    agent.turn()
    assert agent.terminal(cwd, "rm src/helper.py") == 0  # the agent deletes its own file

    listing = agent.rollback(cwd)
    assert "before write_file" in listing and "before terminal: rm src/helper.py" in listing
    assert "+    return 2" in agent.rollback_diff(cwd, 2)
    session = agent.session_diff(cwd)
    assert "src/app.py" in session and "return 2" in session

    reply = agent.rollback(cwd, "2")  # back to before the first write, safely
    assert reply.startswith("restored to ")
    assert "kept your edits: README.md" in reply
    assert app.read_text() == "def main():\n    return 1\n"
    assert not (repo / "src" / "helper.py").exists()
    assert data.read_text() == "a,b\n1,2\n"  # it grew past the cap: reverted all the same
    assert readme.read_text() == "# app\n\nA person's notes.\n"

    agent.turn()
    readme.write_text("# app\n\nnew notes\n")
    reply = agent.rollback(cwd, "1", file="README.md")
    assert reply.startswith("restored to ")
    assert readme.read_text() == "# app\n\nA person's notes.\n"  # the pre-rollback snapshot

    reply = agent.rollback(cwd, "deadbeef")
    assert reply == "restore failed: Checkpoint 'deadbeef' not found"
    reply = agent.rollback(cwd, "1", file="../outside.txt")
    assert "escapes the working directory" in reply

    other = repo.parent / "lib"
    other.mkdir()
    (other / "Makefile").write_text("all:\n")
    agent.turn()
    agent.write_file(str(other / "lib.c"), "int f;\n")
    everything = agent.list_everything()
    assert "[lib]" in everything and "[app]" in everything


def test_maintenance_sequence(harness, repo, home, tmp_path):
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

    assert harness.on_startup(CONFIG) == {"skipped": True}  # a new store counts as swept
    (base / ".last_prune").unlink()
    started = harness.on_startup(CONFIG)
    assert started["skipped"] is False and started["result"]["deleted_stale"] == 1
    assert not archive.exists()

    status = harness.cmd_status()
    assert "2 project(s)" in status[0]
    assert any(str(repo) in line and "(missing)" not in line for line in status)

    shutil.rmtree(doomed)
    asked = []
    report = harness.cmd_prune(7, False, lambda shown: asked.append(shown) or True)
    assert report["deleted_orphan"] == 1 and report["errors"] == 0
    assert len(asked) == 1 and len(asked[0]) == 1
    assert len(hermes.store_status()["projects"]) == 1

    (base / "legacy-20240101-000000").mkdir()
    assert harness.cmd_clear_legacy().startswith("deleted 1 archive(s)")
    assert harness.cmd_clear().startswith("cleared: True")
    assert not base.exists()
    assert harness.cmd_clear() == "cleared: False, 0 bytes"
