"""The whole reach of a command (issue 47, item 1), with the real Claude Code (offline,
tests/agentsim) and the installed hook: in a repository `mono/` holding
`frontend/package.json` and `backend/pyproject.toml`, both with uncommitted edits,

- from `mono/frontend`, `git reset --hard` works on the whole work tree: the backend edit
  is in a checkpoint (of `mono`, git's top level), and a restore brings it back;
- from `mono`, `cd backend && git stash -u && git stash drop`: the backend, where the git
  commands run after the `cd`, has a checkpoint of its own holding the edit;
- from `mono/frontend`, `rm -rf ../backend`: the backend has a checkpoint, and a restore
  brings the whole folder back.

Each is a normal checkpoint of its project, taken before the command ran."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing
from conftest import isolated_git_env

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60,
                   env=isolated_git_env())


@pytest.fixture
def mono(tmp_path: Path) -> Path:
    mono = tmp_path / "mono"
    (mono / "frontend").mkdir(parents=True)
    (mono / "backend").mkdir()
    (mono / "frontend" / "package.json").write_text("{}\n")
    (mono / "frontend" / "app.js").write_text("committed\n")
    (mono / "backend" / "pyproject.toml").write_text("[project]\nname = 'b'\n")
    (mono / "backend" / "app.py").write_text("committed\n")
    git(mono, "init", "-q")
    git(mono, "config", "user.name", "t")
    git(mono, "config", "user.email", "t@example.com")
    git(mono, "add", "-A")
    git(mono, "commit", "-qm", "base")
    (mono / "frontend" / "app.js").write_text("frontend edit\n")
    (mono / "backend" / "app.py").write_text("backend edit\n")
    (mono / "backend" / "new.py").write_text("untracked backend file\n")
    return mono


def session(tmp_path: Path, cwd: Path, command: str, run_rewind):
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    with ModelServer([Shell(command), Say("Done.")], project=str(cwd)) as srv:
        agent = Agent("claude-code", tmp_path / "agent-home", cwd, srv)
        run_rewind("hooks", "install", "claude-code", env={"HOME": agent.env()["HOME"]},
                   check=True)
        run = agent.run("do it")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:], srv.describe())
    return run


def checkpoints(run_rewind, where: Path) -> list[dict]:
    return json.loads(run_rewind("list", "--json", cwd=where, check=True).stdout)


def projects(run_rewind) -> list[str]:
    status = json.loads(run_rewind("status", "--json", check=True).stdout)
    return [p["workdir"] for p in status["projects"]]


def test_git_reset_from_a_sub_project_checkpoints_the_work_tree(
        tmp_path: Path, mono: Path, home: Path, run_rewind) -> None:
    session(tmp_path, mono / "frontend", "git reset --hard", run_rewind)
    assert (mono / "backend" / "app.py").read_text() == "committed\n"   # the damage
    # git's top level: mono itself (before the command, and after it: the hook's after)
    cps = checkpoints(run_rewind, mono)
    assert [c["reason"] for c in cps] == ["after: git reset --hard", "before: git reset --hard"]
    cp = cps[1]
    assert cp["trailers"]["Rewind-Agent"] == "claude-code"
    run_rewind("restore", str(cp["number"]), "--yes", cwd=mono, check=True)
    assert (mono / "backend" / "app.py").read_text() == "backend edit\n"
    assert (mono / "frontend" / "app.js").read_text() == "frontend edit\n"
    # The project the agent stands in has its checkpoint too, as ever.
    assert str(mono / "frontend") in projects(run_rewind)


def test_cd_then_git_stash_checkpoints_where_the_git_commands_run(
        tmp_path: Path, mono: Path, home: Path, run_rewind) -> None:
    session(tmp_path, mono, "cd backend && git stash -u && git stash drop", run_rewind)
    assert (mono / "backend" / "app.py").read_text() == "committed\n"   # the damage
    assert not (mono / "backend" / "new.py").exists()
    assert str(mono / "backend") in projects(run_rewind)
    cps = json.loads(run_rewind("list", "--json", "-C", str(mono / "backend"),
                                check=True).stdout)
    command = "cd backend && git stash -u && git stash drop"
    assert [cp["reason"] for cp in cps] == [f"after: {command}", f"before: {command}"]
    run_rewind("restore", str(cps[1]["number"]), "--yes", "-C", str(mono / "backend"),
               check=True)
    assert (mono / "backend" / "app.py").read_text() == "backend edit\n"
    assert (mono / "backend" / "new.py").read_text() == "untracked backend file\n"


def test_rm_of_a_sibling_project_checkpoints_it(tmp_path: Path, mono: Path, home: Path,
                                                 run_rewind) -> None:
    session(tmp_path, mono / "frontend", "rm -rf ../backend", run_rewind)
    assert not (mono / "backend").exists()   # the damage
    (mono / "backend").mkdir()
    [cp] = checkpoints(run_rewind, mono / "backend")
    assert cp["reason"] == "before: rm -rf ../backend"
    run_rewind("restore", "1", "--yes", cwd=mono / "backend", check=True)
    assert (mono / "backend" / "app.py").read_text() == "backend edit\n"
    assert (mono / "backend" / "new.py").read_text() == "untracked backend file\n"
    assert (mono / "backend" / "pyproject.toml").exists()
