"""Ctrl-C before rewindfs runs a line (issue 21): the installed `rewind` starts Python with
SIGINT blocked (scripts/setup writes its `#!/usr/bin/env -S --block-signal=INT` line), so
an interrupt during the interpreter's own start-up stays pending until rewindfs.cli has
its handler in place and unblocks it: `rewind: interrupted`, exit 130, nothing done.

A signal sent at a chosen moment of Python's start-up cannot be told apart from one sent
later, so the two halves are proven apart: the launcher line starts an interpreter with
SIGINT blocked; and a `rewind` whose SIGINT is already pending when it is executed (sent
to itself, blocked, just before exec: the state the launcher leaves an early Ctrl-C in)
answers as it should."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import REWIND

LAUNCHER = "#!/usr/bin/env -S --block-signal=INT "


def env_blocks_signals() -> bool:
    return subprocess.run(["/usr/bin/env", "--block-signal=INT", "true"],
                          capture_output=True).returncode == 0


def test_the_launcher_starts_python_with_ctrl_c_blocked(tmp_path: Path) -> None:
    first = Path(REWIND).read_text().splitlines()[0]
    if not first.startswith(LAUNCHER):
        assert not env_blocks_signals(), f"scripts/setup left pip's launcher: {first}"
        print("SKIPPED: this env (coreutils < 8.31) cannot block signals; the launcher "
              "stays pip's")
        pytest.skip("env has no --block-signal")
    probe = tmp_path / "probe"
    probe.write_text(first + "\nimport signal\n"
                     "print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n")
    probe.chmod(0o755)
    done = subprocess.run([str(probe)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")


def pending_sigint() -> None:
    """In the child, before exec: a Ctrl-C that came while SIGINT was blocked."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    os.kill(os.getpid(), signal.SIGINT)


def ignored_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pending_sigint()


def launch(args: list[str], cwd: Path, before_exec) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    env["REWIND_NO_SERVER"] = "1"   # run in its own process (no resident one)
    return subprocess.run([REWIND, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, preexec_fn=before_exec)


@pytest.mark.parametrize("args", [["--version"], ["list"], ["checkpoint"], ["status"]],
                         ids=" ".join)
def test_ctrl_c_pending_at_start_interrupts_before_anything(args, home: Path, project: Path,
                                                            store_dir: Path) -> None:
    done = launch(args, project, pending_sigint)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "rewind: interrupted\n")
    assert not store_dir.exists()  # nothing done: not even a store created


def test_ctrl_c_ignored_at_start_stays_ignored(home: Path, project: Path) -> None:
    """`nohup rewind ...`: an ignored SIGINT is not turned into an interrupt."""
    done = launch(["checkpoint"], project, ignored_sigint)
    assert done.returncode == 0 and "taken" in done.stdout, done.stderr
