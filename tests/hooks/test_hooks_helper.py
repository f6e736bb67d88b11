"""The hooks' resident helper: a checkpoint a hook must take is taken by the helper, which
keeps pygit2 and the store loaded, so the hook process imports neither; a stale or absent
helper never costs a checkpoint; an idle one goes away."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import settle, wait_for
from test_hooks_fastpath import log_lines, payload

import rewindfs
from rewindfs.hooks import helper

pytestmark = pytest.mark.usefixtures("no_helper_left")

HOOK = """
import io, json, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from rewindfs.hooks.entry import main
assert main(['claude-code']) == 0
# The store's redactor (plain text: the reason the hook logs) and the faces it is reached
# through are no store in this sense: nothing of git, nothing that costs.
TEXT_ONLY = {'rewindfs.store', 'rewindfs.store.history', 'rewindfs.store.history.redaction'}
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'pygit2'
                        or m.startswith('rewindfs.store') and m not in TEXT_ONLY
                        or m == 'subprocess')))
"""


def hook(home: Path, cwd: Path, command: str, call: str, **env: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", HOOK, payload(cwd, command, call)], capture_output=True, text=True,
        timeout=60, cwd="/", env={"PATH": os.environ["PATH"], "HERMES_HOME": str(home),
                         "HOME": str(home.parent), **env})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout.splitlines()[-1])   # (after the hook's answer, if any)


def helper_of(home: Path) -> int | None:
    return helper.running(home / "rewind-hooks")


def listed(run_rewind, project: Path) -> list[dict]:
    return json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)


def test_checkpoints_go_through_the_helper(project: Path, home: Path, run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    # The first checkpoint is taken by the hook itself, which then starts the helper.
    assert "pygit2" in hook(home, project, "rm -rf build", "t1")
    wait_for(lambda: helper_of(home) is not None, "the helper to start")
    (project / "README.md").write_text("changed\n")
    # The store, pygit2 and subprocess stay in the helper (it reads the stamp too).
    assert hook(home, project, "git reset --hard", "t2") == []
    assert "by the helper" in log_lines(home)[-1]
    cps = listed(run_rewind, project)
    assert [cp["reason"] for cp in cps] == ["before: git reset --hard", "before: rm -rf build"]
    assert cps[0]["trailers"]["Rewind-Agent"] == "claude-code"
    # A checkpoint the helper cannot take fails there, is logged, and the hook still exits 0.
    hook(home, home.parent, "rm -rf x", "t3")
    assert " claude-code error " in log_lines(home)[-1]


def test_the_helper_answers_nothing_changed_from_its_watch(project: Path, home: Path,
                                                           run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    settle(project)
    hook(home, project, "rm -rf build", "t1")      # the first: starts the resident process
    wait_for(lambda: helper_of(home) is not None, "the resident process")
    hook(home, project, "rm -rf build", "t2")      # asks it: the watch is set up, this walks
    hook(home, project, "rm -rf build", "t3")      # the watch's first base
    assert hook(home, project, "rm -rf dist", "t4") == []   # no store in the hook's process
    last = log_lines(home)[-1]
    assert "unchanged since the last checkpoint" in last and "by the helper" in last, last
    assert "read only what changed (watch)" in last, last
    assert len(listed(run_rewind, project)) == 1


def test_a_stale_helper_gives_way(project: Path, home: Path, run_rewind, tmp_path: Path) -> None:
    # The hooks run a copy of rewindfs (first on their path), which the test then changes
    # as an upgrade or an edit would: touching the tree every test worker runs would make
    # the helpers of tests running beside this one stale too.
    code = tmp_path / "code"
    shutil.copytree(Path(rewindfs.__file__).parent, code / "rewindfs",
                    ignore=shutil.ignore_patterns("__pycache__"))
    on_path = {"PYTHONPATH": str(code)}
    (project / "package.json").write_text("{}\n")
    hook(home, project, "rm -rf build", "t1", **on_path)
    wait_for(lambda: helper_of(home) is not None, "the helper to start")
    stale = helper_of(home)
    source = code / "rewindfs" / "hooks" / "__init__.py"
    before = source.stat()
    # (an hour past now: past the newest source file too, whatever its mtime)
    os.utime(source, ns=(before.st_atime_ns, time.time_ns() + 10**9 * 3600))
    (project / "README.md").write_text("changed\n")
    assert "pygit2" in hook(home, project, "rm -rf build", "t2", **on_path)   # taken here
    wait_for(lambda: helper_of(home) != stale, "the stale helper to exit")
    assert len(listed(run_rewind, project)) == 2
    assert "by the helper" not in log_lines(home)[-1]


def test_an_idle_helper_exits_and_none_starts_when_off(project: Path, home: Path) -> None:
    (project / "package.json").write_text("{}\n")
    hook(home, project, "rm -rf build", "t1", REWIND_HOOK_HELPER_IDLE="0.5")
    wait_for(lambda: helper_of(home) is not None, "the helper to start")
    wait_for(lambda: helper_of(home) is None, "the idle helper to exit")
    assert not (home / "rewind-hooks" / "helper.sock").exists()
    (project / "README.md").write_text("changed\n")
    hook(home, project, "rm -rf build", "t2", REWIND_HOOK_HELPER="0")
    assert helper_of(home) is None


STALE = r"""
import json, os, signal, socket, subprocess, sys, time
from pathlib import Path
from rewindfs.hooks import helper
from rewindfs.resident import wire

def until(what, check):
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # kept pending, to be seen
folder = Path(sys.argv[1])
proc = subprocess.Popen([sys.executable, "-m", "rewindfs.resident"])
until("the resident process", lambda: helper.running(folder) == proc.pid)
sock = wire.connect(30)
wire.send(sock, {"code": "another rewindfs"})
answer = wire.receive(sock)
code = proc.wait(timeout=60)
print(json.dumps({"answer": answer, "code": code, "children": [],
                  "sigterm": signal.SIGTERM in signal.sigpending()}))
"""


def test_a_stale_request_ends_the_resident_process_and_signals_no_one(home: Path) -> None:
    """A client of other code: the resident process answers 'stale' itself (no child of
    its answers for it, so none can signal a process that adopted it) and exits; the
    client is sent no signal."""
    folder = home / "rewind-hooks"
    done = subprocess.run([sys.executable, "-c", STALE, str(folder)], capture_output=True,
                          text=True, timeout=120, cwd="/",
                          env={"PATH": os.environ["PATH"], "HERMES_HOME": str(home),
                               "HOME": str(home.parent), "REWIND_HOOK_HELPER_IDLE": "60"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["answer"] == {"ok": False, "stale": True}  # the scenario: it answered
    assert seen["code"] == 0   # and exited
    assert seen["sigterm"] is False
