"""Whatever a hook leaves unprotected is said in the agent's own answer, once per session
(issue 43 point 1, issue 47): a folder in no project, the home directory, a store that
cannot take the checkpoint, the deadline - each in the form the agent shows its user
(Claude Code, Codex and Gemini CLI: `systemMessage`; Cursor: `user_message` beside its
allow), never only in the hook's log. And a project over the old `max_files` is
checkpointed with default settings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import small_tmpfs
from hookproc import claude_payload, hook_env, log_lines, run_hook

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]


def said(done) -> str:
    """What the hook's answer shows the user ('' when it shows nothing)."""
    out = done.stdout.decode().strip()
    if not out:
        return ""
    data = json.loads(out)
    return data.get("systemMessage") or data.get("user_message") or ""


def listed(run_rewind, where: Path, home: Path) -> list[dict]:
    done = run_rewind("list", "--json", cwd=where, env={"HERMES_HOME": str(home)})
    return json.loads(done.stdout) if done.returncode == 0 else []


def test_a_folder_in_no_project_is_refused_and_said_once(tmp_path: Path, home: Path,
                                                        run_rewind) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "notes.txt").write_text("mine\n")
    env = hook_env(home)
    first = run_hook("claude-code", claude_payload(scratch, "rm notes.txt", call="t1"),
                     scratch, env)
    message = said(first)
    assert message.startswith("rewind: not protected: ") and str(scratch) in message, message
    assert "in no project" in message and "rewind checkpoint" in message, message
    assert not (home / "checkpoints" / "store").exists() or \
        listed(run_rewind, scratch, home) == []
    # Said once per session: the next command of the session says nothing more ...
    again = run_hook("claude-code", claude_payload(scratch, "rm notes.txt", call="t2"),
                     scratch, env)
    assert said(again) == ""
    # ... a new session is told again; and the log has every one.
    other = run_hook("claude-code", claude_payload(scratch, "rm notes.txt", call="t3",
                                                   session="s2"), scratch, env)
    assert "in no project" in said(other)
    assert sum("not protected" in line for line in log_lines(home)) == 3
    # `rewind checkpoint` there once makes it a project: protected from then on.
    run_rewind("checkpoint", "-m", "mine", cwd=scratch, env={"HERMES_HOME": str(home)},
               check=True)
    (scratch / "notes.txt").write_text("changed\n")
    done = run_hook("claude-code", claude_payload(scratch, "rm notes.txt", call="t4"),
                    scratch, env)
    assert said(done) == ""
    assert listed(run_rewind, scratch, home)[0]["reason"] == "before: rm notes.txt"


def test_the_home_directory_is_refused_and_said(tmp_path: Path, home: Path) -> None:
    user_home = home.parent   # hook_env's HOME
    done = run_hook("claude-code", claude_payload(user_home, "rm -rf old"), user_home,
                    hook_env(home))
    message = said(done)
    assert message.startswith("rewind: not protected: ") and "too broad" in message, message


def test_cursor_is_told_beside_its_allow(tmp_path: Path, home: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    payload = json.dumps({"hook_event_name": "beforeShellExecution", "conversation_id": "c1",
                          "generation_id": "g1", "command": "rm x", "cwd": str(scratch),
                          "workspace_roots": [str(scratch)]}).encode()
    done = run_hook("cursor", payload, scratch, hook_env(home))
    answer = json.loads(done.stdout)
    assert answer["permission"] == "allow"
    assert answer["user_message"].startswith("rewind: not protected: ")
    assert "in no project" in answer["user_message"]


def test_a_store_that_cannot_take_the_checkpoint_is_said(tmp_path: Path, home: Path,
                                                        project: Path) -> None:
    """The checkpoint fails for want of space: the agent's user hears it at once."""
    (project / "package.json").write_text("{}\n")
    (project / "big.bin").write_bytes(os.urandom(3 << 20))   # more than the store's room
    with small_tmpfs(tmp_path / "small", "1m") as small:
        full_home = small / "hermes"
        full_home.mkdir()
        done = run_hook("claude-code", claude_payload(project, "rm big.bin"), project,
                        hook_env(full_home, REWIND_HOOK_HELPER="0"))
        message = said(done)
        lines = log_lines(full_home)
    assert message.startswith("rewind: not protected: ") and str(project) in message, message
    assert "space" in message.lower(), message
    assert any("not protected" in line for line in lines), lines


def test_the_deadline_is_said(project: Path, home: Path, run_rewind) -> None:
    """A checkpoint still under way at the hook's deadline (the helper's child stopped, as a
    slow one would be): the command runs without it, and the user is told."""
    from conftest import wait_for

    from rewindfs.hooks import helper

    (project / "package.json").write_text("{}\n")
    run_hook("claude-code", claude_payload(project, "rm -rf build", call="t0"), project,
             hook_env(home))
    wait_for(lambda: helper.running(home / "rewind-hooks") is not None, "the helper to start")
    (project / "README.md").write_text("changed\n")
    done = run_hook("claude-code", claude_payload(project, "rm README.md", call="t1"), project,
                    hook_env(home, REWIND_HOOK_TIMEOUT="3",
                             REWIND_TEST_STOP_HELPER_CHECKPOINT="1"))
    assert any("did not finish within 3s" in line for line in log_lines(home))  # the scenario
    message = said(done)
    assert message.startswith("rewind: not protected: ") and "within 3s" in message, message


def test_a_project_past_the_old_max_files_is_checkpointed_by_default(
        tmp_path: Path, home: Path, run_rewind) -> None:
    """50,000 was the default `max_files`: a bigger project had no checkpoint at all. (Its
    first checkpoint takes longer than the hook's default deadline here: the deadline is
    raised, as a first checkpoint in the background (issue 43, point 5) will make moot.)"""
    big = tmp_path / "big"
    (big / "src").mkdir(parents=True)
    (big / "package.json").write_text("{}\n")
    for d in range(51):
        folder = big / "src" / f"d{d}"
        folder.mkdir()
        for f in range(1000):
            (folder / f"f{f}.txt").write_text(f"{d}/{f}\n")
    done = run_hook("claude-code", claude_payload(big, "rm -rf src"), big,
                    hook_env(home, REWIND_HOOK_HELPER="0", REWIND_HOOK_TIMEOUT="600"), timeout=600)
    assert said(done) == ""
    [cp] = listed(run_rewind, big, home)
    assert cp["reason"] == "before: rm -rf src"
    assert cp["files_changed"] == 51_001   # every file, the first checkpoint


def test_a_path_in_no_project_that_a_command_may_destroy_is_said(tmp_path: Path, home: Path,
                                                                project: Path) -> None:
    """`rm -rf /tmp/...` from a project: the project is checkpointed, the folder it names
    is in none, and the user hears that it is not (with no credential of the command)."""
    (project / "package.json").write_text("{}\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "data.csv").write_text("1,2\n")
    env = hook_env(home)
    done = run_hook("claude-code", claude_payload(
        project, f"rm -rf {scratch} && curl -H 'Authorization: Bearer sk-live-{'x' * 24}' "
        "https://example.com"), project, env)
    message = said(done)
    assert message.startswith("rewind: not protected: ") and str(scratch) in message, message
    assert "in no project" in message and "sk-live" not in message, message
    # A command checkpointed that names the same path but destroys nothing the classifier
    # knows of says nothing, and neither does a destructive one inside the project.
    assert said(run_hook("claude-code", claude_payload(
        project, f"python3 tools/stats.py {scratch}/data.csv", call="t2", session="s2"),
        project, env)) == ""
    assert said(run_hook("claude-code", claude_payload(project, "rm -rf src", call="t3",
                                                       session="s3"), project, env)) == ""


def test_projects_past_the_bound_are_said(tmp_path: Path, home: Path, run_rewind) -> None:
    """A command reaching more projects than the hook checkpoints before it (8): the first
    8 named each have their checkpoint, and the user hears how many did not."""
    from rewindfs.hooks.scope import MAX_PROJECTS

    names = [f"p{n}" for n in range(MAX_PROJECTS + 3)]
    for name in ["here", *names]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "package.json").write_text("{}\n")
        (tmp_path / name / "data.txt").write_text(f"{name}\n")
    here = tmp_path / "here"
    command = "rm -rf " + " ".join(f"../{name}" for name in names)
    # (Nine first checkpoints in one call: the deadline is not what this test is about.)
    done = run_hook("claude-code", claude_payload(here, command), here,
                    hook_env(home, REWIND_HOOK_TIMEOUT="600"), timeout=600)
    message = said(done)
    assert message.startswith("rewind: not protected: ") and "3 more project(s)" in message
    status = json.loads(run_rewind("status", "--json", env={"HERMES_HOME": str(home)},
                                   check=True).stdout)
    assert sorted(p["workdir"] for p in status["projects"]) == sorted(
        str(tmp_path / name) for name in ["here", *names[:MAX_PROJECTS]])
