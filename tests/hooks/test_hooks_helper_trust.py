"""The hooks' helper trusts no request and keeps no secret (issue 33, cases 7 and 10): it
starts isolated, in /, with an environment reduced to what a checkpoint needs (no API key
of the agent's in /proc/PID/environ, no project folder on its PATH); a request is checked
field by field, and a bad one (not JSON, a field of the wrong type, a PATH or
HERMES_HOME of its choosing) is answered with an error while the helper stays up; a
file it loaded that changes on disk (a replaced pygit2 `.so`) makes it exit; nonsense in
REWIND_HOOK_HELPER_IDLE is one log line and the default, not a crash."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from conftest import wait_for
from hookproc import claude_payload, hook_env, log_lines, run_hook

from rewindfs.hooks import helper
from rewindfs.resident import wire as helperwire

pytestmark = pytest.mark.usefixtures("no_helper_left")
KEY = "sk-ant-api03-" + "Zx9" * 30


def helper_of(home: Path) -> int | None:
    return helper.running(home / "rewind-hooks")


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.fixture
def proj(project: Path) -> Path:
    (project / "package.json").write_text("{}\n")
    (project / "bin").mkdir()
    return project


def first_checkpoint(proj: Path, home: Path, **env: str) -> int:
    """A hook's first checkpoint, which starts the helper: the helper's pid."""
    run_hook("claude-code", claude_payload(proj, "rm -rf build", call="t0"), proj,
             hook_env(home, **env))
    wait_for(lambda: helper_of(home) is not None, "the helper to start")
    return helper_of(home)


def test_the_helper_starts_isolated_without_the_agents_secrets(proj: Path, home: Path) -> None:
    pid = first_checkpoint(proj, home, ANTHROPIC_API_KEY=KEY, OPENAI_API_KEY=KEY,
                           PATH=f"{proj / 'bin'}:bin:{os.environ['PATH']}",
                           PYTHONPATH=str(proj))
    seen = environ(pid)
    assert KEY not in Path(f"/proc/{pid}/environ").read_text(errors="replace")
    assert "ANTHROPIC_API_KEY" not in seen and "PYTHONPATH" not in seen
    assert seen["HERMES_HOME"] == str(home)
    assert all(part.startswith("/") and not part.startswith(str(proj))
               for part in seen["PATH"].split(":")), seen["PATH"]
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert argv[1] == b"-I" and os.readlink(f"/proc/{pid}/cwd") == "/"


def exchange(home: Path, request: dict | bytes) -> dict | None:
    """One request to the helper, as a hook would send it; its first answer."""
    fd = os.open(home / "rewind-hooks", os.O_RDONLY | os.O_DIRECTORY)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(60)
            sock.connect(helperwire.address(fd, home / "rewind-hooks"))
            if isinstance(request, bytes):
                sock.sendall(request)
            else:
                helperwire.send(sock, request)
            return helperwire.receive(sock)
    finally:
        os.close(fd)


def test_a_bad_request_is_an_error_and_the_helper_stays_up(proj: Path, home: Path) -> None:
    pid = first_checkpoint(proj, home)
    good = {"code": helperwire.code_key(), "home": str(home), "env": {},
            "call": ["claude-code", "shell", "Bash", "rm x", str(proj), "s1", "p1", "t9", ""],
            "reason": "before: rm x", "turn": "p1", "root": ""}
    bad = [b"not json\n", b"[1, 2]\n",
           {**good, "code": 7},
           {**good, "call": ["too", "short"]},
           {**good, "call": [1] * 9},
           {**good, "env": {"PATH": f"{proj / 'bin'}:/usr/bin"}},
           {**good, "env": {"HERMES_HOME": "/elsewhere"}},
           {**good, "home": "/elsewhere"},
           {**good, "root": "relative/path"},
           {**good, "reason": "x" * 100_000},
           {**good, "kind": "rm -rf /"}]
    for request in bad:
        answer = exchange(home, request)
        assert answer is not None and answer["ok"] is False, (request, answer)
        assert answer["error"].startswith("bad request: "), (request, answer)
        assert helper_of(home) == pid   # still up: the same helper
    # ... and it still serves a good one.
    (proj / "README.md").write_text("changed\n")
    run_hook("claude-code", claude_payload(proj, "rm -rf dist", call="t1"), proj,
             hook_env(home))
    assert "by the helper" in log_lines(home)[-1] and helper_of(home) == pid


def test_a_replaced_pygit2_so_makes_the_helper_exit(proj: Path, home: Path,
                                                    tmp_path: Path) -> None:
    copy = tmp_path / "lib"
    shutil.copytree(Path(pygit2.__file__).parent, copy / "pygit2",
                    ignore=shutil.ignore_patterns("__pycache__"))
    boot = (f"import sys; sys.path.insert(0, {str(copy)!r}); "
            "from rewindfs.resident.server import main; sys.exit(main())")
    proc = subprocess.Popen([sys.executable, "-I", "-c", boot], cwd="/",
                            env=hook_env(home, REWIND_HOOK_HELPER_IDLE="120"))
    wait_for(lambda: helper_of(home) == proc.pid, "the helper to start")
    so = next((copy / "pygit2").glob("_pygit2*.so"))
    assert str(so) in Path(f"/proc/{proc.pid}/maps").read_text()   # the scenario: loaded
    replacement = so.with_name(so.name + ".new")
    shutil.copy2(so, replacement)
    os.replace(replacement, so)   # as an upgrade replaces it

    run_hook("claude-code", claude_payload(proj, "rm -rf build"), proj, hook_env(home))
    assert proc.wait(timeout=60) == 0   # it exited, and the hook took the checkpoint itself
    lines = log_lines(home)
    assert any(f"{so} changed on disk since the helper started: exiting" in line
               for line in lines), lines
    assert lines[-1].split(" ", 3)[2] == "info" and "by the helper" not in lines[-1]


def test_nonsense_in_the_idle_setting_is_said_and_the_default_used(proj: Path,
                                                                   home: Path) -> None:
    pid = first_checkpoint(proj, home, REWIND_HOOK_HELPER_IDLE="inf")
    assert json.loads(json.dumps(environ(pid)))["REWIND_HOOK_HELPER_IDLE"] == "inf"
    assert any("REWIND_HOOK_HELPER_IDLE='inf' is not a number of seconds" in line
               and "600 used" in line for line in log_lines(home))
    (proj / "README.md").write_text("changed\n")
    run_hook("claude-code", claude_payload(proj, "rm -rf dist", call="t1"), proj,
             hook_env(home, REWIND_HOOK_HELPER_IDLE="inf"))
    assert "by the helper" in log_lines(home)[-1]
