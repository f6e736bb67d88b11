"""The project's own git history in the safety net, through the real Claude Code offline
(tests/agentsim): the agent runs a command that destroys git state; the hook's checkpoint
before it recorded the repository (the classifier named the command), so
`rewind restore 1 --git` gives back every commit, branch, tag, stash, HEAD, remote and the
staged index, `git fsck --strict` finds nothing wrong, and `rewind undo` puts the
repository back as the command left it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing
from conftest import settle, wait_for
from gitrepos import fsck, git, rich_repository, state
from hookproc import claude_payload, hook_env, log_lines, run_hook

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]

# command -> what shows the command really destroyed what it destroys (checked before any
# restore, so the restore is proven to bring back what was gone)
CASES = {
    "rm -rf .git": lambda project, before: not (project / ".git").exists(),
    "git branch -D feature && git gc --prune=now":
        lambda project, before: _gone(project, _ref(before, "refs/heads/feature")),
    "git stash drop": lambda project, before: len(state(project)["stash"].splitlines()) == 1,
    "git reset --hard HEAD~2": lambda project, before: (
        git(project, "diff", "--cached") == "" and "unstaged" not in
        (project / "app.py").read_text() and _moved_back(project, before)),
}


@pytest.mark.parametrize("command", list(CASES))
def test_restore_git_brings_the_repository_back(command: str, tmp_path: Path, home: Path,
                                                run_rewind, monkeypatch) -> None:
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    monkeypatch.setenv("REWIND_HOOK_HELPER_IDLE", "30")
    project = rich_repository(tmp_path)
    before = state(project)
    files_before = (project / "app.py").read_text()
    agent_home = tmp_path / "agent-home"
    with ModelServer([Shell(command), Say("Done.")], project=str(project)) as srv:
        # Claude Code asks before a command touches `.git` (a "sensitive file"); the user
        # said yes: its permission checks are skipped (as root only in a sandbox).
        session = Agent("claude-code", agent_home, project, srv,
                        extra_args=("--dangerously-skip-permissions",),
                        extra_env={"IS_SANDBOX": "1"})
        run_rewind("hooks", "install", "claude-code", env={"HOME": str(agent_home)},
                   check=True)
        run = session.run("clean up the repository")
        log = (f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}\n"
               f"{srv.describe()}\ntool results: {_tool_results(srv)}\n"
               f"{(home / 'rewind-hooks' / 'hook.log').read_text()}")
    assert run.returncode == 0, log
    assert CASES[command](project, before), f"the command did not do its damage\n{log}"
    after = state(project)

    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    # (and an "after" when the command changed files: the hook's after event)
    [checkpoint] = [cp for cp in listed if cp["reason"].startswith("before: ")]
    assert checkpoint["reason"] == f"before: {command}", log
    number = str(checkpoint["number"])
    assert checkpoint["trailers"].get("Rewind-Git-State"), (checkpoint, log)
    assert "repository state recorded" in log, log   # the hook said what it recorded

    shown = run_rewind("show", number, cwd=project, check=True).stdout
    assert "branches: feature " in shown and "main " in shown, shown

    done = run_rewind("restore", number, "--git", "--yes", cwd=project, check=True).stdout
    assert state(project) == before, done
    assert (project / "app.py").read_text() == files_before
    assert fsck(project) == "", fsck(project)

    run_rewind("undo", cwd=project, check=True)
    assert state(project) == after
    if (project / ".git").exists():
        assert fsck(project) == ""


def test_refs_moved_with_no_file_changed_still_recorded(tmp_path: Path, home: Path,
                                                       run_rewind) -> None:
    """The hook's fast path (the stamp: no file changed since the newest checkpoint) is
    not taken before a command that can destroy git state: `git stash drop` changed no
    file, yet the checkpoint before `git tag -d` records the repository as it is now."""
    project = rich_repository(tmp_path)
    env = hook_env(home, REWIND_HOOK_HELPER="0")
    settle(project)
    run_hook("claude-code", claude_payload(project, "git stash drop", call="t1"), project, env)
    stamps = home / "checkpoints" / "store" / "stamps"
    wait_for(lambda: any(stamps.glob("*.json")), "the stamp of the first checkpoint")
    git(project, "stash", "drop")   # what the agent ran: no file of the tree changed
    after_drop = state(project)
    run_hook("claude-code", claude_payload(project, "git tag -d v1", call="t2"), project, env)
    assert "nothing changed (stamp)" not in log_lines(home)[-1], log_lines(home)
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    states = [cp["trailers"].get("Rewind-Git-State") for cp in listed]
    assert len(listed) == 2 and states[0] and states[1] and states[0] != states[1], listed
    git(project, "tag", "-d", "v1")
    run_rewind("restore", "1", "--git", "--yes", cwd=project, check=True)
    assert state(project) == after_drop


def _tool_results(srv: ModelServer) -> list[str]:
    """What the agent's tool calls answered, as it told the model."""
    out = []
    for request in srv.of("anthropic"):
        for message in (request.body or {}).get("messages", []):
            for part in message.get("content", []) if isinstance(message, dict) else []:
                if isinstance(part, dict) and part.get("type") == "tool_result":
                    out.append(str(part.get("content"))[:500])
    return out


def _ref(snapshot: dict, name: str) -> str:
    return next(line.split()[0] for line in str(snapshot["refs"]).splitlines()
                if line.endswith(" " + name))


def _gone(project: Path, oid: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=project,
                          capture_output=True).returncode != 0


def _moved_back(project: Path, before: dict) -> bool:
    """main moved two commits back (the staged and unstaged work went with the reset)."""
    old = _ref(before, "refs/heads/main")
    return git(project, "rev-parse", "main").strip() == \
        git(project, "rev-parse", f"{old}~2").strip()
