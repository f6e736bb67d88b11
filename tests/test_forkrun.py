"""The tests' fork server (tests/forkrun.py) stands in for an exec of `rewind`: the same
output, errors and exit status, the run's own environment and directory, and an exec
again once the server is gone; the mount's server starts a foreground mount a test can
signal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import forkrun
import pytest
from conftest import REWIND

AGE = re.compile(r"\b(now|\d+ ?(s|sec|seconds?|m|min|minutes?|h|hours?) ago)\b")


def same(text: str) -> str:
    """Output with its ages blanked: a second may pass between the two runs."""
    return AGE.sub("AGE", text)


def exec_run(args: list[str], cwd, env) -> subprocess.CompletedProcess:
    return subprocess.run([REWIND, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.fixture
def server(fork_server):
    if fork_server is None:
        pytest.skip("REWIND_TEST_EXEC=1: every run is exec'd")
    return fork_server


def test_forked_runs_answer_as_exec_ones(server, project, child_env, run_rewind):
    (project / "ünïcode – naïve.txt").write_text("é\n")
    run_rewind("checkpoint", "-m", "first", cwd=project, check=True)
    (project / "README.md").write_text("changed\n")
    env = child_env()
    cases = [["--version"], ["list"], ["list", "--json"], ["log", "README.md"], ["diff", "--stat"],
             ["show", "1:ünïcode – naïve.txt"], ["diff", "nosuch"], ["restore"],
             ["no-such-verb"]]
    for args in cases:
        forked = server.run(args, project, env, 60)
        assert forked.args == [REWIND, *args]
        want = exec_run(args, project, env)
        assert (forked.returncode, same(forked.stdout), same(forked.stderr)) == \
            (want.returncode, same(want.stdout), same(want.stderr)), args
    assert any(server.run(a, project, env, 60).returncode != 0 for a in cases)  # errors too


def test_a_run_gets_its_own_directory_and_environment(server, tmp_path, child_env):
    """What each run sets is what the command sees: HERMES_HOME from its environment,
    the project from its directory (one server, runs in turn with others' settings)."""

    homes = {"a": tmp_path / "home-a", "b": tmp_path / "home-b"}
    for name, home in homes.items():
        project = tmp_path / name
        project.mkdir()
        (project / "f.txt").write_text(name)
        got = server.run(["checkpoint", "-m", name], project, child_env(HERMES_HOME=str(home)),
                         60)
        assert got.returncode == 0, got.stderr
    for name, home in homes.items():
        env = child_env(HERMES_HOME=str(home))
        mine = json.loads(server.run(["list", "--json"], tmp_path / name, env, 60).stdout)
        assert [c["reason"] for c in mine] == [name]
        other = "b" if name == "a" else "a"
        assert json.loads(server.run(["list", "--json"], tmp_path / other, env, 60).stdout) == []


def test_runs_exec_once_the_server_is_gone(server, tmp_path, child_env):
    """A dead server is said once on stderr, and the run is exec'd instead."""
    lone = forkrun.Server(REWIND, server.env)
    try:
        env = child_env()
        assert lone.run(["--version"], tmp_path, env, 60).returncode == 0
        lone.proc.kill()
        lone.proc.wait()
        saved, forkrun.server = forkrun.server, lone
        try:
            got = forkrun.run(REWIND, ["--version"], cwd=tmp_path, env=env, timeout=60)
        finally:
            forkrun.server = saved
        assert got.returncode == 0 and "version" in got.stdout
        assert lone.failed and not lone.usable(env, tmp_path)
    finally:
        lone.close()


def test_a_spawned_mount_is_a_child_of_the_mount_server(mount_server, foreground, store,
                                                        project, run_rewind, tmp_path):
    """A forked foreground mount serves, is signalled through its pidfd and reports its
    status through the server: SIGTERM unmounts (0), SIGKILL is -9."""
    if mount_server is None:
        pytest.skip("REWIND_TEST_EXEC=1: every mount is exec'd")
    run_rewind("checkpoint", project, "-m", "one", check=True)
    mounted = foreground(forked=True)
    assert isinstance(mounted.proc, forkrun.Spawned)
    parent = Path(f"/proc/{mounted.pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    assert int(parent) == mount_server.proc.pid  # forked by the server, not exec'd
    assert (mounted.mnt / project.name / "1" / "README.md").exists()
    assert mounted.proc.poll() is None
    assert mounted.stop() == 0
    killed = foreground(forked=True, at=tmp_path / "mnt2")
    killed.proc.kill()
    assert killed.proc.wait(timeout=30) == -signal.SIGKILL
    assert killed.proc.poll() == -signal.SIGKILL


EXIT_PROBE = """
import atexit, sys, threading, time
from rewindfs.resident import forked
atexit.register(lambda: open({out!r}, "a").write("atexit\\n"))
def late():
    time.sleep(0.3)
    open({out!r}, "a").write("thread\\n")
threading.Thread(target=late).start()
sys.stdout.write("unflushed")
forked.finish(7)
"""


@pytest.mark.parametrize("reader", ["reads", "gone"])
def test_the_quick_exit_keeps_what_a_command_sees(tmp_path, reader):
    """resident.forked.finish, which ends forked runs (the tests' and the resident
    process's): threads waited for, then atexit, then stdout
    flushed, as Python's own exit; a flush that fails is Python's to report (120)."""
    out = tmp_path / "order.txt"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a buffered stdout
    code = EXIT_PROBE.format(out=str(out))
    if reader == "reads":
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=60)
        assert (proc.returncode, proc.stdout) == (7, "unflushed"), proc.stderr
    else:  # stdout a pipe nobody reads any more
        read_end, write_end = os.pipe()
        os.close(read_end)
        proc = subprocess.run([sys.executable, "-c", code], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=60)
        os.close(write_end)
        assert proc.returncode == 120 and "Exception ignored" in proc.stderr, proc.stderr
    assert out.read_text() == "thread\natexit\n"
