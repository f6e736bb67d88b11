"""The CLI's watchdog (cli.watchdog) ends what is stuck and nothing that works.

Each case is a real process that starts the real watchdog (a forked helper fed by a
heartbeat thread) and then does one thing: sits in a C call that released the GIL,
runs Python, waits on purpose, or ignores a Ctrl-C and later holds the GIL for
longer than the Ctrl-C grace. Every process has a timeout: a watchdog that misses a
hang fails the test by that timeout; no timing assertions.

The limits are short (REWIND_STALL_SECONDS of 1-4 s: beats of an eighth of that, a
Ctrl-C grace of two beats), and each margin a late beat could eat is over half a
second: measured with the machine loaded (a full suite and six busy loops on two
cores), a beat of 0.125 s came at most 0.23 s after the one before, beside a main
thread spinning in Python or waiting.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

# Each waits out the watchdog's deadlines (seconds): started first (tests/conftest.py).
pytestmark = pytest.mark.long
TIMEOUT = 60

DRIVER = r"""
import ctypes, signal, sys, time
from rewindfs.cli import watchdog
from rewindfs.store.objects import liveness

watchdog.start()
what, seconds = sys.argv[1], float(sys.argv[2])
if what == "after-ctrl-c":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as rewind does while the pager runs
print("ready", flush=True)
if what == "c-call":  # one C call that released the GIL and never returns
    ctypes.CDLL(None).pause()
elif what == "python":  # pure Python: no work counted, but never in one call for long
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
elif what == "patient":  # a long wait it chose (a lock another process holds, say)
    with liveness.patient():
        time.sleep(seconds)
elif what == "undeclared-wait":
    time.sleep(600)
elif what == "after-ctrl-c":
    with liveness.patient():
        sys.stdin.readline()  # the test has sent Ctrl-C to the process group
    end = time.monotonic() + 3 * seconds  # then goes on with its work: progress seen
    while time.monotonic() < end:
        pass
    # then one C call holding the GIL, longer than the grace, shorter than the limit
    ctypes.PyDLL(None).usleep(int(5 * seconds * 1e6))
print("done", flush=True)
"""


def driver(what: str, stall: str, seconds: float = 0, portable: str = "",
           **kw) -> subprocess.Popen:
    """`portable`: REWIND_PORTABLE (rewindfs.portable): pidfd,proc watch the command as
    the helper's parent, and tell a stopped one with ps(1)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWIND_")}
    env["REWIND_NO_SERVER"] = "1"   # run in its own process (no resident one)
    env["REWIND_STALL_SECONDS"] = stall
    env["REWIND_PORTABLE"] = portable
    return subprocess.Popen([sys.executable, "-c", DRIVER, what, str(seconds)], env=env,
                            text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, **kw)


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


@pytest.mark.parametrize("portable", ["", "pidfd,proc"], ids=["linux", "portable"])
def test_a_c_call_that_released_the_gil_is_ended(portable):
    """The heartbeat thread runs on (the GIL is free), but nothing progresses."""
    proc = driver("c-call", "1", portable=portable)
    out, err = finish(proc)
    assert out == "ready\n"
    assert proc.returncode == 3, err
    assert re.fullmatch(r"rewind: no progress for \d+ s inside libgit2 .*\n", err), err


def test_an_undeclared_long_wait_counts_as_stuck():
    proc = driver("undeclared-wait", "1")
    out, err = finish(proc)
    assert proc.returncode == 3 and "no progress" in err


@pytest.mark.parametrize("portable", ["", "pidfd,proc"], ids=["linux", "portable"])
@pytest.mark.parametrize("what", ["python", "patient"])
def test_work_and_chosen_waits_are_never_ended(what, portable):
    """2.5 seconds with a one-second limit (beats every 0.125 s): Python that runs, or a
    wait it declared."""
    proc = driver(what, "1", 2.5, portable=portable)
    out, err = finish(proc)
    assert (proc.returncode, out, err) == (0, "ready\ndone\n", "")


def test_a_ctrl_c_it_went_on_from_is_forgotten():
    """A Ctrl-C the command ignored (the pager's), then progress: a later call that
    holds the GIL for longer than the Ctrl-C grace is not taken for a hang. A four-second
    limit: beats every 0.5 s, a grace of 1 s; 1.5 s of work after the Ctrl-C (a beat
    more than 0.75 s after it clears it), then the GIL held for 2.5 s (1.5 s past the
    grace, and with the last beat's half second, a second short of the limit)."""
    proc = driver("after-ctrl-c", "4", 0.5, stdin=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == "ready\n"
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal sends it: helper included
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert (proc.returncode, out, err) == (0, "done\n", "")


def test_the_helper_holds_a_pidfd_from_before_the_fork(tmp_path):
    """No pid-reuse window: the command opens the pidfd of itself, then forks; the
    helper never looks its parent up by pid."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is missing: scripts/setup installs it (apt-get install strace)")
    trace = tmp_path / "trace"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWIND_")}
    env["REWIND_NO_SERVER"] = "1"   # run in its own process (no resident one)
    proc = subprocess.run([strace, "-f", "-qq", "-o", str(trace), "-e",
                           "trace=pidfd_open,clone,clone3,fork,vfork", sys.executable, "-c",
                           DRIVER, "patient", "1"], env={**env, "REWIND_STALL_SECONDS": "2"},
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    lines = trace.read_text().splitlines()
    main = int(lines[0].split()[0])
    opened = [i for i, ln in enumerate(lines) if re.match(rf"{main} +pidfd_open\({main},", ln)]
    forks = [(i, int(m[1])) for i, ln in enumerate(lines)
             if (m := re.match(rf"{main} +(?:clone3?|v?fork)\(.*= (\d+)$", ln))]
    assert opened and forks, lines
    helper = forks[0][1]
    assert opened[0] < forks[0][0]
    assert not [ln for ln in lines if re.match(rf"{helper} +pidfd_open", ln)]
