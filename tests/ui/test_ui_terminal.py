"""`rewind ui` in a real terminal (tmux, 80x24): keys sent as a person types them, the pane
read back, the files checked on disk. From "the agent deleted my file" to the file back,
and back again, with nothing typed but `rewind ui` and keys; then the same screen with
NO_COLOR in shades of grey only. A deadline only guards against a hang."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import REWIND, rewind_env
from uihelp import uidemo

DEADLINE = 60.0
SGR_COLOR = re.compile(r"\x1b\[([0-9;]*)m")


class Tmux:
    """One tmux server of this test's own (its own socket), one pane running `argv`."""

    def __init__(self, argv: list[str], env: dict[str, str], status: Path):
        self.socket = f"rewind-ui-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        # How the command ended, written by the shell that ran it: tmux's own pane_dead_status
        # is sometimes never filled in (a pane seen dead before tmux reaped its process).
        self.status = status
        command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "sh", "-c",
                              '"$@"; echo "$?" >' + shlex.quote(str(status)), "sh", *argv])
        self.tmux("-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", "-s", "ui",
                  command)
        self.tmux("set-option", "-t", "ui", "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, text=True,
                              capture_output=True, timeout=30).stdout

    def screen(self, colours: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if colours else []), "-t", "ui")

    def wait_for(self, words: str) -> str:
        end = time.monotonic() + DEADLINE
        while True:
            shown = self.screen()
            if words in shown:
                return shown
            assert time.monotonic() < end, f"never showed {words!r}:\n{shown}"
            time.sleep(0.05)

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "ui", key)

    def exit_status(self) -> int:
        """The command's exit status (128 + N: killed by signal N)."""
        end = time.monotonic() + DEADLINE
        while not (self.status.exists() and self.status.read_text().endswith("\n")):
            assert time.monotonic() < end, f"rewind ui did not end:\n{self.screen()}"
            time.sleep(0.05)
        code = int(self.status.read_text())
        assert code < 128, f"rewind ui was killed by signal {code - 128}:\n{self.screen()}"
        return code

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=30)


@pytest.fixture
def terminal(demo, user_home):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux): no real terminal to run in")
    home, workdir = demo
    opened: list[Tmux] = []

    def start(**extra: str) -> Tmux:
        env = rewind_env(home, user_home, TERM="xterm-256color", **extra)
        env = {k: v for k, v in env.items() if k in ("PATH", "HOME", "LC_ALL", "TERM",
                                                    "HERMES_HOME", *extra)}
        opened.append(Tmux([REWIND, "ui", "-C", str(workdir)], env,
                           workdir.parent / f"ui-status-{len(opened)}"))
        return opened[-1]

    yield start, workdir
    for tmux in opened:
        tmux.close()


def test_the_deleted_file_back_and_back_again(terminal):
    start, workdir = terminal
    assert not (workdir / "notes.md").exists(), "the agent deleted it"
    ui = start()
    ui.wait_for("timeline: 3 checkpoints")
    ui.keys("Enter")  # checkpoint 1's files: app.py, then notes.md
    ui.wait_for("2 files changed since #1")
    ui.keys("j")
    ui.wait_for("notes.md: changed since #1")
    ui.keys("r")
    ui.wait_for("restore notes.md? y/n")
    assert not (workdir / "notes.md").exists(), "nothing changes before y"
    ui.keys("y")
    ui.wait_for("restored notes.md to")
    assert (workdir / "notes.md").read_bytes() == uidemo.FILES["notes.md"]
    ui.wait_for("timeline: 4 checkpoints")  # its pre-rollback snapshot
    ui.keys("u")
    ui.wait_for("undo the last restore? y/n")
    ui.keys("y")
    ui.wait_for("undid the last restore")
    assert not (workdir / "notes.md").exists()
    ui.keys("q")
    assert ui.exit_status() == 0


def test_no_color_draws_in_grey_only(terminal):
    start, _ = terminal
    ui = start(NO_COLOR="1")
    ui.wait_for("timeline: 3 checkpoints")
    shown = ui.screen(colours=True)
    colours = [params for params in SGR_COLOR.findall(shown) if "5;" in params or "2;" in params]
    assert colours, "no colour codes at all: the test would prove nothing"
    for params in colours:
        fields = [int(f) for f in params.split(";") if f]
        for at, field in enumerate(fields):
            if field in (38, 48) and fields[at + 1] == 5:
                assert fields[at + 2] >= 232 or fields[at + 2] in (0, 7, 8, 15, 16, 231), params
            elif field in (38, 48) and fields[at + 1] == 2:
                assert len(set(fields[at + 2:at + 5])) == 1, params
    ui.keys("q")
    assert ui.exit_status() == 0
