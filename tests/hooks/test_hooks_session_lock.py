"""Parallel tool calls of one session never lose each other's memory (issue 33, case 11):
a hook changes the session's state file only under the session's lock. The test holds
the lock as a concurrent hook would, sees the hook wait for it (in /proc/locks), changes
the file meanwhile, and finds both changes once it lets go; a lock held for good costs
the hook its memory update, never its checkpoint or the agent's time."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import flocks, wait_for
from hookproc import claude_payload, hook_env, log_lines

from rewindfs.hooks import state


def session_files(home: Path) -> tuple[Path, Path]:
    path = state._path("claude-code", "s1")   # HERMES_HOME is the test's (the home fixture)
    assert path.is_relative_to(home)
    return path, path.with_suffix(".lock")


def start_hook(project: Path, home: Path) -> subprocess.Popen:
    from rewindfs.hooks.agents import hook_command

    proc = subprocess.Popen(
        shlex.split(hook_command("claude-code")), cwd=project, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=hook_env(home, REWIND_HOOK_HELPER="0"))
    proc.stdin.write(claude_payload(project, "", call="w1", tool="Write",
                                    file_path=str(project / "notes.txt")))
    proc.stdin.close()
    return proc


def test_a_hook_waits_for_the_session_lock_and_keeps_the_other_change(project: Path,
                                                                      home: Path) -> None:
    (project / "package.json").write_text("{}\n")
    path, lock = session_files(home)
    path.parent.mkdir(mode=0o700, parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)   # a concurrent hook, in the middle of its change
    try:
        proc = start_hook(project, home)
        wait_for(lambda: any(waiting and pid == proc.pid for waiting, _kind, pid in flocks(lock))
                 or proc.poll() is not None, "the hook to wait for the session's lock", 60)
        assert proc.poll() is None, proc.stderr.read()   # the scenario: it is waiting
        # Meanwhile the other hook's change lands.
        path.write_text(json.dumps({"turn": "other-turn",
                                    "roots": {"/elsewhere": "/elsewhere"}}))
    finally:
        os.close(fd)
    assert proc.wait(timeout=60) == 0 and proc.stderr.read() == b""
    data = json.loads(path.read_text())
    assert data["turn"] == "other-turn"                              # theirs kept
    assert data["roots"] == {"/elsewhere": "/elsewhere", str(project): str(project)}  # ours


@pytest.mark.long
def test_a_lock_held_for_good_costs_only_the_memory(project: Path, home: Path,
                                                    run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    path, lock = session_files(home)
    path.parent.mkdir(mode=0o700, parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = start_hook(project, home)
        assert proc.wait(timeout=120) == 0 and proc.stderr.read() == b""
        assert flocks(lock) == [(False, "WRITE", os.getpid())]   # still held: the scenario
    finally:
        os.close(fd)
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    assert [cp["reason"] for cp in listed] == ["before: Write notes.txt"]
    assert any("session memory not saved" in line for line in log_lines(home))
