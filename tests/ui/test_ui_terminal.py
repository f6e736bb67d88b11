"""`rewind ui` in a real terminal (tmux, 80x24): keys sent as a person types them, the pane
read back, the files checked on disk. From "the agent deleted my file" to the file back,
and back again, with nothing typed but `rewind ui` and keys; then the same screen with
NO_COLOR in shades of grey only; then every way it can end (q, SIGTERM, SIGHUP, a bug
in a key's handler, q while a restore waits for another process's lock) leaving the
terminal as it found it (issue 41). A deadline only guards against a hang."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import REWIND, rewind_env
from uihelp import uidemo

from rewindfs.store import Layout, Store, checkpoints, project_hash

DEADLINE = 60.0
SGR_COLOR = re.compile(r"\x1b\[([0-9;]*)m")


class Tmux:
    """One tmux server of this test's own (its own socket), one pane running `argv`."""

    def __init__(self, argv: list[str], env: dict[str, str], status: Path):
        self.socket = f"rewind-ui-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        # How the command ended, written by the shell that ran it: tmux's own pane_dead_status
        # is sometimes never filled in (a pane seen dead before tmux reaped its process).
        # Before it, the terminal's modes as the command left them; after it, the pane
        # stays alive (a dead pane's cursor is tmux's) until the test ends.
        self.status, self.modes = status, status.with_suffix(".stty")
        script = (f'"$@"; s=$?; stty -a >{shlex.quote(str(self.modes))} 2>&1; '
                  f'echo "$s" >{shlex.quote(str(status))}; exec sleep {int(DEADLINE * 10)}')
        command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "sh", "-c",
                              script, "sh", *argv])
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
        """The command's exit status (not killed by a signal)."""
        code = self.ended()
        assert code < 128, f"rewind ui was killed by signal {code - 128}:\n{self.screen()}"
        return code

    def ended(self) -> int:
        """The command's exit status as its shell saw it (128 + N: killed by signal N)."""
        end = time.monotonic() + DEADLINE
        while not (self.status.exists() and self.status.read_text().endswith("\n")):
            assert time.monotonic() < end, f"rewind ui did not end:\n{self.screen()}"
            time.sleep(0.05)
        return int(self.status.read_text())

    def pid(self) -> int:
        """The command's process (the child of the pane's shell)."""
        shell = self.tmux("display-message", "-p", "-t", "ui", "#{pane_pid}").strip()
        found = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True,
                               timeout=30).stdout.split()
        assert len(found) == 1, found
        return int(found[0])

    def flags(self) -> dict[str, str]:
        """What the terminal is set to: the alternate screen, mouse reporting, the cursor."""
        names = ("alternate_on", "mouse_any_flag", "mouse_sgr_flag", "cursor_flag")
        shown = self.tmux("display-message", "-p", "-t", "ui",
                          " ".join(f"#{{{name}}}" for name in names)).split()
        return dict(zip(names, shown, strict=True))

    def tty_modes(self) -> set[str]:
        """The pane's terminal modes now (`stty -a` of its tty, read from outside)."""
        tty = self.tmux("display-message", "-p", "-t", "ui", "#{pane_tty}").strip()
        out = subprocess.run(["stty", "-a", "-F", tty], capture_output=True, text=True,
                             timeout=30, check=True).stdout
        return set(out.split())

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=30)


@pytest.fixture
def terminal(demo, user_home):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux): no real terminal to run in")
    home, workdir = demo
    opened: list[Tmux] = []

    def start(argv: tuple[str, ...] = (REWIND,), **extra: str) -> Tmux:
        env = rewind_env(home, user_home, TERM="xterm-256color", **extra)
        env = {k: v for k, v in env.items() if k in ("PATH", "HOME", "LC_ALL", "TERM",
                                                    "HERMES_HOME", *extra)}
        opened.append(Tmux([*argv, "ui", "-C", str(workdir)], env,
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


# -- every way out leaves the terminal as it was ---------------------------------------------

RUNNING = {"alternate_on": "1", "mouse_any_flag": "1", "mouse_sgr_flag": "1",
           "cursor_flag": "0"}
LEFT = {"alternate_on": "0", "mouse_any_flag": "0", "mouse_sgr_flag": "0", "cursor_flag": "1"}


def running(ui: Tmux) -> None:
    """The UI has the terminal: the alternate screen, mouse reporting, no cursor, raw."""
    ui.wait_for("timeline: 3 checkpoints")
    assert ui.flags() == RUNNING
    modes = ui.tty_modes()
    assert {"-icanon", "-echo"} <= modes, modes


def left_as_it_was(ui: Tmux) -> None:
    assert ui.flags() == LEFT
    modes = set(ui.modes.read_text().split())
    assert {"icanon", "echo", "isig"} <= modes, modes
    assert "timeline:" not in ui.screen()  # back on the shell's own screen


def test_q_leaves_the_terminal_as_it_was(terminal):
    start, _ = terminal
    ui = start()
    running(ui)
    ui.keys("q")
    assert ui.exit_status() == 0
    left_as_it_was(ui)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_signal_leaves_the_terminal_as_it_was(terminal, sig):
    start, _ = terminal
    ui = start()
    running(ui)
    os.kill(ui.pid(), sig)
    assert ui.ended() == 128 + sig, "it ends as the signal asked (its shell sees it so)"
    left_as_it_was(ui)


BROKEN = """
import sys
import rewindfs.ui.app as app

def broken(self):
    raise RuntimeError("a bug in a key's handler")

app.RewindApp.action_help = broken  # `?`: the bug a test needs
from rewindfs.cli import main

main(sys.argv[1:], "rewind")
"""


def test_a_bug_leaves_the_terminal_as_it_was_and_fails(terminal):
    start, _ = terminal
    ui = start((sys.executable, "-c", BROKEN))
    running(ui)
    ui.keys("?")
    assert ui.ended() == 1, "a bug is not a success"
    left_as_it_was(ui)
    assert "a bug in a key's handler" in ui.screen()  # the traceback, for a report


HOLDER = """
import sys
from pathlib import Path
from rewindfs.store.objects.locks import file_lock

with file_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes it
"""


def test_q_while_a_restore_waits_for_a_lock_quits_at_once(terminal, home):
    start, workdir = terminal
    store = Store(Layout.for_home(home))
    before = [cp.id for cp in checkpoints(store.repo, project_hash(workdir))]
    ui = start()
    ui.wait_for("timeline: 3 checkpoints")
    ui.keys("Enter")
    ui.wait_for("2 files changed since #1")
    ui.keys("j")
    ui.wait_for("notes.md: changed since #1")
    ui.keys("r")
    ui.wait_for("restore notes.md? y/n")
    # Another process takes the project (a long checkpoint, a restore in another shell).
    holder = subprocess.Popen([sys.executable, "-c", HOLDER,
                               str(store.layout.lock_file(project_hash(workdir)))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        ui.keys("y")
        ui.wait_for(f"waiting for process {holder.pid}")  # the restore waits for it
        ui.keys("q")
        assert ui.exit_status() == 0
        assert holder.poll() is None, "the lock was held all along: q did not wait for it"
        left_as_it_was(ui)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert not (workdir / "notes.md").exists(), "the restore never started"
    assert [cp.id for cp in checkpoints(store.repo, project_hash(workdir))] == before
