"""What the hook's checkpoint leaves out that the command may destroy is in its outcome
(`left_out`, hooks.leftout), for the hook's answer to the agent's user (issue 47): the
12 MB file over the cap before `rm -rf app data`, also when nothing changed since the
last checkpoint (the stamp's path); before `git clean`, the ignored files it deletes, as
git decides (-x, -X, neither). And the issue's case through the real Claude Code:
`rewind restore 1` brings back the tracked files the excludes matched and names the one
it cannot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing
from conftest import make_git_repo, settle, wait_for
from hookproc import claude_payload, hook_env, run_hook

CSV = b"id,label\n" + b"1,a\n" * 3_000_000   # 12 MB: over max_file_size_mb (10)

OUTCOME = """
import json, sys
from rewindfs.hooks import payloads
from rewindfs.hooks.entry import handle
call = payloads.parse('claude-code', json.loads(sys.argv[1]))
print(json.dumps(handle(call)))
"""


def outcome(home: Path, cwd: Path, command: str, call: str) -> dict:
    """The hook's outcome for a Bash call of Claude Code's (the hook's own code, as the
    installed hook runs it, without the helper)."""
    payload = json.dumps({"session_id": "s1", "prompt_id": "p1", "cwd": str(cwd),
                          "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": command}, "tool_use_id": call})
    done = subprocess.run([sys.executable, "-I", "-c", OUTCOME, payload], capture_output=True,
                          text=True, timeout=120,
                          env={"PATH": os.environ["PATH"], "HERMES_HOME": str(home),
                               "HOME": str(home.parent), "REWIND_HOOK_HELPER": "0"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


def issue_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    make_git_repo(root, {"app/env/prod.py": b"DB = 'prod'\n",
                         "app/build/steps.py": b"steps = [1]\n", "app/main.py": b"main()\n",
                         "data/train.csv": CSV})
    return root


def stamped(home: Path) -> bool:
    return any((home / "checkpoints" / "store" / "stamps").glob("*.json"))


def test_the_oversize_file_is_in_the_outcome_before_rm(home: Path, tmp_path: Path) -> None:
    root = issue_project(tmp_path)
    settle(root)
    first = outcome(home, root, "rm -rf app data", "t1")
    assert first["taken"] is True
    assert first["left_out"] == {"count": 1, "files": [
        {"kind": "oversize", "path": "data/train.csv", "size": len(CSV),
         "why": "over the size cap, max_file_size_mb"}]}, first
    from rewindfs.hooks.leftout import notice

    assert notice(first["left_out"]) == (
        "not in the checkpoint (no restore brings them back): data/train.csv (11.4 MiB, "
        "over the size cap, max_file_size_mb)")
    # Nothing changed since: no checkpoint (the stamp says so), the same notice.
    wait_for(lambda: stamped(home), "the stamp the checkpoint leaves behind")
    again = outcome(home, root, "rm -rf app data", "t2")
    assert again.get("stamp") is True and again["left_out"] == first["left_out"], again


@pytest.mark.usefixtures("no_helper_left")
@pytest.mark.parametrize("helper", ["0", "1"])
def test_the_hooks_answer_tells_the_user_what_the_checkpoint_left_out(
        home: Path, tmp_path: Path, helper: str) -> None:
    """The installed hook's answer to Claude Code says it, once per session: its
    `systemMessage` (the user) and PreToolUse `additionalContext` (the model); with the
    resident process (helper 1) as without it."""
    root = issue_project(tmp_path)
    env = hook_env(home, REWIND_HOOK_HELPER=helper)
    done = run_hook("claude-code", claude_payload(root, "rm -rf app data", call="t1"), root,
                    env)
    said = json.loads(done.stdout)
    message = said["systemMessage"]
    assert "data/train.csv (11.4 MiB, over the size cap, max_file_size_mb)" in message, said
    assert "no restore brings them back" in message, said
    assert said["hookSpecificOutput"]["additionalContext"] == message, said
    # Said once per session: the next command of the same session's answer is empty.
    again = run_hook("claude-code", claude_payload(root, "rm -rf app data", call="t2"), root,
                     env)
    assert again.stdout.strip() == b"", again.stdout


@pytest.mark.parametrize("command,named", [
    ("git clean -fdx", {"node_modules/", ".env", "build/"}),
    ("git clean -fd", {"build/"}),              # git keeps what its .gitignore ignores
    ("git clean -fX", {"node_modules/", ".env"}),
    ("git clean -n -x", None),                  # a dry run deletes nothing
])
def test_git_clean_names_the_ignored_files_it_deletes(home: Path, tmp_path: Path,
                                                      command: str, named) -> None:
    root = tmp_path / "proj"
    make_git_repo(root, {"src/a.py": b"a\n", ".gitignore": b"node_modules/\n.env\n"})
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("x\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / "build").mkdir()            # rewindfs's default excludes; git does not ignore it
    (root / "build" / "out.js").write_text("y\n")
    got = outcome(home, root, command, "t1")
    if named is None:
        assert got is None or got.get("left_out") is None, got
        return
    files = got["left_out"]["files"]
    assert {f["path"] for f in files} == named, files
    assert {f["kind"] for f in files} == {"ignored"} and got["left_out"]["count"] == len(named)


def test_the_issues_case_with_the_real_claude_code(tmp_path: Path, home: Path, run_rewind,
                                                   monkeypatch) -> None:
    """`rm -rf app data` run by Claude Code with the hook installed: the restore brings
    back app/env/prod.py and app/build/steps.py and names data/train.csv."""
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    monkeypatch.setenv("REWIND_HOOK_HELPER", "0")
    root = issue_project(tmp_path)
    with ModelServer([Shell("rm -rf app data"), Say("Done.")], project=str(root)) as srv:
        session = Agent("claude-code", tmp_path / "agent-home", root, srv)
        run_rewind("hooks", "install", "claude-code",
                   env={"HOME": str(tmp_path / "agent-home")}, check=True)
        run = session.run("clean up")
    assert run.returncode == 0, run.stderr[-2000:]
    assert not (root / "app").exists() and not (root / "data").exists()
    listed = json.loads(run_rewind("list", "--json", cwd=root, check=True).stdout)
    [before] = [cp for cp in listed if cp["reason"] == "before: rm -rf app data"]
    done = run_rewind("restore", str(before["number"]), "--yes", cwd=root, check=True).stdout
    assert (root / "app/env/prod.py").read_bytes() == b"DB = 'prod'\n", done
    assert (root / "app/build/steps.py").read_bytes() == b"steps = [1]\n", done
    assert "data/train.csv (11.4 MiB, over the size cap, max_file_size_mb); missing now" in \
        done, done
    shutil.rmtree(tmp_path / "agent-home", ignore_errors=True)
