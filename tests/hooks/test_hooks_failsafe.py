"""Fail safe by default (issue 47): the installed hook checkpoints before every command not
known to change nothing.

- With the real Claude Code (offline): `bash -euo pipefail -c 'rm g'`, `python3 -c` code
  removing a folder and `make clean` - each judged harmless by the old classifier, each
  destroying files - have their checkpoints, and each restores what it destroyed; `ls`
  and `git status` take none.
- More checkpoints do not shorten the history a person can go back to: after a
  200-command session (40 prompts of 5 commands, files edited between commands), the
  state before each of the last 20 turns (max_snapshots, 20) restores.
- `only_destructive` (off by default) brings back the classifier's gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing
from hookproc import claude_payload, hook_env, run_hook

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]


def listed(run_rewind, where: Path) -> list[dict]:
    return json.loads(run_rewind("list", "--json", cwd=where, check=True).stdout)


def test_claude_code_commands_the_classifier_missed_are_checkpointed(
        tmp_path: Path, home: Path, run_rewind) -> None:
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "generated").mkdir()
    (project / "g").write_text("g\n")
    (project / "src" / "main.py").write_text("print('main')\n")
    (project / "generated" / "schema.sql").write_text("create table t (x int);\n")
    (project / "Makefile").write_text("clean:\n\trm -rf generated\n")
    commands = ["ls -la", "git status", "bash -euo pipefail -c 'rm g'",
                "python3 -c \"import shutil; shutil.rmtree('src')\"", "make clean"]
    with ModelServer([*map(Shell, commands), Say("Done.")], project=str(project)) as srv:
        agent = Agent("claude-code", tmp_path / "agent-home", project, srv)
        run_rewind("hooks", "install", "claude-code", env={"HOME": agent.env()["HOME"]},
                   check=True)
        run = agent.run("clean up")
    assert run.returncode == 0, (run.stderr[-2000:], srv.describe())
    # The damage: all three ran.
    assert not (project / "g").exists() and not (project / "src").exists()
    assert not (project / "generated").exists()
    cps = listed(run_rewind, project)
    # Newest first; `ls -la` and `git status` took none. Each command that changed files
    # has its after (the hook's after event); the state before the next one is that after
    # (nothing changed in between: no checkpoint of its own).
    bash, python, make = commands[2:]
    assert [cp["reason"] for cp in cps] == [f"after: {make}", f"after: {python}",
                                            f"after: {bash}", f"before: {bash}"], cps
    # The state before each command restores what it destroyed (restores add
    # checkpoints: found by id).
    befores = cps[1:]   # before make clean, before python, before bash
    for cp, lost in zip(befores, ("generated/schema.sql", "src/main.py", "g"), strict=True):
        number = next(c["number"] for c in listed(run_rewind, project)
                      if c["hash"] == cp["hash"])
        run_rewind("restore", str(number), "--yes", cwd=project, check=True)
        assert (project / lost).exists(), (cp["reason"], lost)
    assert (project / "g").read_text() == "g\n"


def test_the_state_before_each_of_the_last_turns_restores(project: Path, home: Path,
                                                          run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    commands = ["make build", "python3 -c 'print(1)'", "npm test", "rm -rf dist",
                "cargo run"]
    env = hook_env(home)
    for turn in range(40):
        for n, command in enumerate(commands):
            (project / "state.txt").write_text(f"{turn}.{n}\n")   # an edit between commands
            run_hook("claude-code", claude_payload(project, command, call=f"t{turn}-{n}",
                                                   turn=f"p{turn}"), project, env)
    cps = listed(run_rewind, project)
    turns = {cp["trailers"]["Rewind-Turn"] for cp in cps}
    assert {f"p{t}" for t in range(20, 40)} <= turns, sorted(turns)
    assert len(turns) <= 21   # the cap still holds: the last 20 turns (and one before)
    for turn in range(20, 40):
        oldest = [cp for cp in listed(run_rewind, project)
                  if cp["trailers"].get("Rewind-Turn") == f"p{turn}"][-1]
        run_rewind("restore", str(oldest["number"]), "--yes", cwd=project, check=True)
        assert (project / "state.txt").read_text() == f"{turn}.0\n", turn


def test_only_destructive_brings_back_the_classifiers_gate(project: Path, home: Path,
                                                           run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    env = hook_env(home)
    run_hook("claude-code", claude_payload(project, "make test", call="t1"), project, env)
    assert [cp["reason"] for cp in listed(run_rewind, project)] == ["before: make test"]
    (home / "config.yaml").write_text("checkpoints:\n  only_destructive: true\n")
    (project / "README.md").write_text("changed\n")
    run_hook("claude-code", claude_payload(project, "make test", call="t2"), project, env)
    run_hook("claude-code", claude_payload(project, "rm README.md", call="t3"), project, env)
    assert [cp["reason"] for cp in listed(run_rewind, project)] == [
        "before: rm README.md", "before: make test"]
