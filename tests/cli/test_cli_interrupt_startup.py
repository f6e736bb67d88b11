"""Ctrl-C during start-up (issue 21): a SIGINT delivered at many moments of a `rewind`
process, from the first line of rewindfs on, ends it with `rewind: interrupted` and exit
status 130 (or lets it finish, when it came after the work), never with a traceback from
inside an import, and leaves nothing half written.

Which imports had finished when the signal landed comes from `python -X importtime` (a
module's line is printed when its import completes): a run counts as interrupted during
start-up when some of the imports an uninterrupted run makes are missing. The sweep goes
on until several runs landed there, so the test proves its scenario happened. Signals go
out once rewindfs.cli is imported; one that comes earlier, during the interpreter's own
start-up, waits blocked until then (tests/cli/test_cli_interrupt_launch.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from conftest import REWIND

from rewindfs.store import project_hash

WANTED = 4  # interrupts that must land during start-up
# Runs at least, spread over the whole run (start-up and work). Eight delays of the
# sequence below land on every outcome twelve did, for every command here: measured over
# three sweeps each, runs 9-12 met no outcome runs 1-8 had not (in an import, in the
# command's work, after it: exit 0 or killed by the signal while finalizing); start-up
# landings past the eighth run come from WANTED, which the sweep keeps going for.
SPREAD = 8
MAX_RUNS = 150  # a bound on the sweep, not a timing assertion
# A piece of an -X importtime line cut by the signal (Python writes the line in more than
# one piece; the process may end, or print its one line, between them).
IMPORT_TAIL = re.compile(r"\d+ \|\s+\d+ \| ")


def run(args: list[str], env: dict[str, str], cwd: Path, delay: float | None = None):
    """(exit status, modules imported, stderr lines that are not -X importtime's, seconds
    from rewindfs.cli imported to exit).

    With `delay`, SIGINT is sent that long after rewindfs.cli finished importing (its
    -X importtime line is printed then), so it certainly lands after the module's first
    statement took Ctrl-C over: what lands before that is Python's own start-up."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", REWIND, *args], cwd=cwd,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.rstrip().endswith(b"| rewindfs.cli"):
            started = time.monotonic()
            if delay is not None:
                time.sleep(delay)
                proc.send_signal(signal.SIGINT)
            break
    _, err = proc.communicate(timeout=120)
    rest = time.monotonic() - started
    modules, other = set(), []
    for line in b"".join([*lines, err]).decode(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            modules.add(line.rsplit("|", 1)[1].strip())
        elif line.strip() and not IMPORT_TAIL.search(line):
            other.append(line)
    return proc.returncode, modules, other, rest


def sweep(args: list[str], env: dict[str, str], cwd: Path, after=None) -> int:
    """Interrupt `rewind ARGS` at delays spread over its run after rewindfs.cli is
    imported; returns how many landed during start-up. `after()` checks the store after
    each run."""
    code, full, other, rest = run(args, env, cwd)
    assert code == 0, other
    landed = runs = 0
    while (landed < WANTED or runs < SPREAD) and runs < MAX_RUNS:
        delay = rest * ((runs * 0.618) % 1.0)  # low-discrepancy spread over the run
        runs += 1
        code, modules, other, _ = run(args, env, cwd, delay)
        if after is not None:
            after()
        assert "Traceback" not in "\n".join(other), other
        if code == 0 or (code, other) == (-signal.SIGINT, []):
            # After the work: not delivered before exit, or killed by it while Python
            # finalized (the default action is back by then).
            continue
        assert (code, other) == (130, ["rewind: interrupted"]), (code, other, delay)
        if not full <= modules:
            landed += 1
    print(f"{' '.join(args)}: {landed} of {runs} interrupts landed during start-up")
    assert landed >= WANTED, f"only {landed} of {runs} interrupts landed during start-up"
    return landed


@pytest.fixture
def env(home: Path, tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    out["REWIND_NO_SERVER"] = "1"   # run in its own process (no resident one)
    out.update(HERMES_HOME=str(home), HOME=str(tmp_path), LC_ALL="C.UTF-8")
    return out


# (`--help` is left out: after rewindfs.cli it imports two small modules and answers, too
# quick for an interrupt sent from here to land in them on a loaded machine; an interrupt
# pending at its start is tests/cli/test_cli_interrupt_launch.py's.)
@pytest.mark.parametrize("args", [["diff"], ["list"], ["status"]], ids=" ".join)
def test_ctrl_c_while_starting_reads(args, project, env, run_rewind):
    run_rewind("checkpoint", project, check=True)
    sweep(args, env, project)


def test_ctrl_c_while_a_checkpoint_starts_writes_nothing_half(project, env, store_dir, fsck,
                                                              run_rewind):
    """Every run changes a file first, so each one that gets past start-up writes a
    checkpoint: the store stays whole after each, with no temp or lock file left."""
    run_rewind("checkpoint", project, check=True)
    ref = f"refs/hermes/{project_hash(project)}"
    counter = [0]

    def after() -> None:
        repo = pygit2.Repository(str(store_dir))
        tip = repo.references.get(ref).peel(pygit2.Commit)
        assert tip.tree is not None  # the ref names a whole commit
        leftovers = [p for p in store_dir.rglob("*")
                     if p.name.startswith("tmp_") or p.name.endswith(".lock")
                     and p.parent.name != "locks"]
        assert not leftovers, leftovers
        counter[0] += 1
        (project / "a.txt").write_text(f"{counter[0]}\n")

    (project / "a.txt").write_text("0\n")
    sweep(["checkpoint"], env, project, after)
    fsck()


IMPORTED_UNDER_CTRL_C = """
import os, signal, sys, time
from rewindfs.cli import interrupts

interrupts.install()
sys.path.insert(0, sys.argv[1])
try:
    with interrupts.raising():
        import interrupted_module  # sends itself SIGINT half way through its body
        time.sleep(30)  # where the interrupt is raised, once the import is done
except KeyboardInterrupt:
    whole = getattr(sys.modules.get("interrupted_module"), "DONE", False)
    print("KeyboardInterrupt after the import" if whole else "KeyboardInterrupt inside it",
          flush=True)
"""


def test_ctrl_c_inside_an_import_waits_for_the_import(tmp_path):
    """A Ctrl-C during a command's work that lands inside an import (here a module's own
    code, run by importlib) is raised once the import is done: raised inside importlib's
    code it could be swallowed with a printed traceback, or leave a module half imported
    (the traceback seen once in a sweep above, in `import _socket`)."""
    (tmp_path / "interrupted_module.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nDONE = True\n")
    proc = subprocess.run([sys.executable, "-c", IMPORTED_UNDER_CTRL_C, str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines() == ["KeyboardInterrupt after the import"], proc.stderr
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


INTERRUPTED_IN_AN_AT_FORK_HANDLER = """
import os, signal, sys, time
from rewindfs.cli import interrupts

interrupts.install()
sent = []


def interrupt():  # Python runs the signal's handler here, inside the at-fork handler
    sent.append(True)
    os.kill(os.getpid(), signal.SIGINT)


os.register_at_fork(after_in_parent=interrupt)
try:
    with interrupts.raising():
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)
        time.sleep(30)  # where the interrupt is raised again (or in waitpid just above)
except KeyboardInterrupt:
    print("KeyboardInterrupt after the fork" if sent else "KeyboardInterrupt before it",
          flush=True)
"""


def test_ctrl_c_in_a_callback_python_cannot_raise_from_is_raised_again(tmp_path):
    """A Ctrl-C that lands in an at-fork handler (logging's, in the CI run that found
    it), a weakref callback or a finalizer would be printed as "Exception ignored" with
    a traceback and lost: it is raised again where the command's work can catch it."""
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_IN_AN_AT_FORK_HANDLER],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines() == ["KeyboardInterrupt after the fork"], \
        (proc.stdout, proc.stderr)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


INTERRUPTED_WHILE_NOTICES_ARE_SAID = """
import os, signal, sys
from rewindfs.cli import group, main


def interrupted(ctx):  # Ctrl-C lands once the command is done, as its notices are said
    print("notices said", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGINT)


group._say_notices = interrupted
sys.argv[0] = "rewind"
main(["status"])
"""


def test_ctrl_c_after_the_work_is_interrupted_not_aborted(home, tmp_path):
    """An interrupt raised after the command's own handling (its notices, the end of the
    block that turns Ctrl-C into KeyboardInterrupt) is `rewind: interrupted`, 130: click
    itself would print "Aborted!" and exit 1 (seen in a sweep)."""
    env = {**os.environ, "HERMES_HOME": str(home), "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_NOTICES_ARE_SAID],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert proc.stderr.splitlines()[0] == "notices said", proc.stderr
    assert (proc.returncode, proc.stderr.splitlines()[1:]) == (130, ["rewind: interrupted"]), \
        proc.stderr


RETRIED_INSIDE_A_CAPTURE = """
import os, signal, sys, time
from rewindfs.cli import interrupts
from rewindfs.store.capture import interrupts as capture

interrupts.install()
interrupts.RETRY = 0.2  # time enough to enter the capture's block below first
sys.path.insert(0, sys.argv[1])
try:
    with interrupts.raising():
        import interrupted_module  # sends itself SIGINT half way through its body
        print("retry armed" if signal.getitimer(signal.ITIMER_REAL)[0] > 0 else "not armed",
              flush=True)
        with capture.deferred():  # as a capture does around libgit2's callbacks
            try:
                deadline = time.monotonic() + 30
                while not capture.requested() and time.monotonic() < deadline:
                    time.sleep(0.01)
                print("noted by the capture" if capture.requested() else "never came",
                      flush=True)
            except KeyboardInterrupt:
                print("raised inside the capture", flush=True)
                raise
except KeyboardInterrupt:
    print("KeyboardInterrupt after the capture", flush=True)
"""


def test_an_interrupt_held_back_by_an_import_is_noted_by_a_capture(tmp_path):
    """The retry of an interrupt that landed inside an import goes to whatever takes
    Ctrl-C when it comes: a capture's block notes it and winds down at its next poll,
    and the interrupt is raised after the block. Raised inside the block, in one of
    libgit2's callbacks, it failed the capture with "could not capture ...: no error"."""
    (tmp_path / "interrupted_module.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nDONE = True\n")
    proc = subprocess.run([sys.executable, "-c", RETRIED_INSIDE_A_CAPTURE, str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines() == ["retry armed", "noted by the capture",
                                        "KeyboardInterrupt after the capture"], \
        (proc.stdout, proc.stderr)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
