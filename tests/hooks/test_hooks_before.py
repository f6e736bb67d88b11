"""A checkpoint is "before" only if it was recorded before the hook answered (issue 33,
case 2). With the helper stopped (SIGSTOP) the hook does not wait its whole deadline:
it takes the checkpoint itself, and the helper, once it runs again, finds the hook gone
and records nothing. A helper's checkpoint still under way at the hook's deadline (its
child stopped, as a slow one on a large tree would be) is killed and waited for before
the hook answers: no "before: rm ..." ever lands after the rm ran."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import wait_for
from hookproc import claude_payload, hook_env, log_lines, run_hook

from rewindfs.hooks import helper
from rewindfs.hooks.agents import hook_command

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]


def process_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def reasons(run_rewind, project: Path) -> list[str]:
    return [cp["reason"] for cp in
            json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)]


@pytest.fixture
def with_helper(project: Path, home: Path) -> int:
    """The project's first checkpoint taken by a hook, which starts the helper: its pid."""
    (project / "package.json").write_text("{}\n")
    (project / "important.txt").write_text("keep me\n")
    run_hook("claude-code", claude_payload(project, "rm -rf build", call="t0"), project,
             hook_env(home))
    wait_for(lambda: helper.running(home / "rewind-hooks") is not None, "the helper to start")
    return helper.running(home / "rewind-hooks")


def test_a_stopped_helper_the_hook_checkpoints_itself_and_nothing_comes_late(
        with_helper: int, project: Path, home: Path, run_rewind, files_of) -> None:
    (project / "README.md").write_text("changed\n")
    os.kill(with_helper, signal.SIGSTOP)
    try:
        wait_for(lambda: process_state(with_helper) == "T", "the helper to stop")
        run_hook("claude-code", claude_payload(project, "rm important.txt", call="t1"),
                 project, hook_env(home))
        assert process_state(with_helper) == "T"   # the scenario: stopped all along
        newest = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)[0]
        assert newest["reason"] == "before: rm important.txt"
        assert files_of(newest["hash"])[b"important.txt"][1] == b"keep me\n"
        assert "by the helper" not in log_lines(home)[-1]
        (project / "important.txt").unlink()   # the agent's command, after the answer
    finally:
        os.kill(with_helper, signal.SIGCONT)
    # The helper runs again and reads the request the hook left: it records nothing.
    wait_for(lambda: any("request abandoned (claude-code: before: rm important.txt)" in line
                         for line in log_lines(home)), "the helper to drop the request", 60)
    assert reasons(run_rewind, project) == ["before: rm important.txt", "before: rm -rf build"]


@pytest.mark.parametrize("portable", ["", "pidfd"], ids=["pidfd", "no-pidfd"])
def test_a_helper_checkpoint_past_the_deadline_is_stopped_before_it_records(
        portable: str, with_helper: int, project: Path, home: Path, run_rewind) -> None:
    """With pidfds, and without them (REWIND_PORTABLE=pidfd, rewindfs.portable): the
    child is then killed by its pid while the connection it holds proves it alive."""
    (project / "README.md").write_text("changed\n")
    env = hook_env(home, REWIND_HOOK_TIMEOUT="5", REWIND_TEST_STOP_HELPER_CHECKPOINT="1",
                   REWIND_PORTABLE=portable)
    seen: list[int] = []

    def child_stopped() -> bool:   # the helper's child working for the hook, stopped
        seen[:] = [c for c in children(with_helper) if process_state(c) == "T"]
        return bool(seen)

    proc = subprocess.Popen(shlex.split(hook_command("claude-code")), cwd=project, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(claude_payload(project, "rm important.txt", call="t1"))
    proc.stdin.close()
    wait_for(lambda: child_stopped() or proc.poll() is not None, "the checkpoint to be under way")
    assert seen, "the helper's child never got the go-ahead"   # the scenario
    assert proc.wait(timeout=60) == 0 and proc.stderr.read() == b""
    # The hook answered only once that child was gone: it can record nothing any more.
    assert process_state(seen[0]) in (None, "Z")
    assert "the helper's checkpoint was stopped before it was recorded" in log_lines(home)[-1]
    assert reasons(run_rewind, project) == ["before: rm -rf build"]
