"""The chmod race (issue 11): a process swapping project files with symlinks to files
outside the project (renameat2 RENAME_EXCHANGE, in a tight loop) while a restore flips
those files' executable bit must never get an outside file chmod'ed.

The restore's apply step runs plans of mode changes on real files, raced by a real
swapper process, until ROUNDS plans or SECONDS have passed (bounded either way); the
outside files must keep 0600. (A whole restore around each plan would spend its time
capturing: the race window is in apply, so the test spends its time there.) A second
test runs whole restores under the same racer.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_restore_helpers import checkpoint

from rewindfs import restore as rs
from rewindfs.errors import RewindError
from rewindfs.restore.apply import apply
from rewindfs.restore.plan import CHMOD, Action, Plan
from rewindfs.store.history.files.trees import EXECUTABLE, Entry

pytestmark = pytest.mark.long  # each races for seconds: started first (tests/conftest.py)
SECONDS = 10.0
ROUNDS = 20_000
PAIRS = 20

RACER = r"""
import ctypes, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
renameat2 = libc.renameat2
renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
AT_FDCWD, RENAME_EXCHANGE = -100, 2
pairs = [(a.encode(), b.encode()) for a, b in zip(sys.argv[2::2], sys.argv[3::2])]
stop = time.monotonic() + float(sys.argv[1])
swaps = 0

def report(*_):  # SIGTERM: say how many swaps were made, so the test knows it raced
    print(swaps, flush=True)
    sys.exit(0)

signal.signal(signal.SIGTERM, report)
print("ready", flush=True)
while time.monotonic() < stop:
    for _ in range(20):
        for a, b in pairs:
            swaps += renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0
    if swaps == 0:
        sys.exit("renameat2(RENAME_EXCHANGE) does not work here")
"""


class Raced:
    """PAIRS project files `toolN.sh`, each swapped with `node_modules/swapN`, a symlink to
    `outside/secretN` (0600), by a racer process."""

    def __init__(self, project: Path, outside: Path):
        outside.mkdir()
        (project / "node_modules").mkdir(exist_ok=True)  # ignored: never captured
        self.pairs = []
        for i in range(PAIRS):
            secret = outside / f"secret{i}"
            secret.write_text("not the project's\n")
            secret.chmod(0o600)
            tool = project / f"tool{i}.sh"
            tool.write_text(f"#!/bin/sh\necho {i}\n")
            tool.chmod(0o644)
            self.pairs.append((tool, project / "node_modules" / f"swap{i}", secret))
        self.racer: subprocess.Popen | None = None

    def plant(self) -> None:
        for tool, link, secret in self.pairs:
            if not (tool.is_symlink() or link.is_symlink()):
                # a restore that saw the link at toolN.sh replaced it (renaming over a
                # link never follows it): plant it again
                link.unlink(missing_ok=True)
                link.symlink_to(secret)

    def start(self, seconds: float) -> None:
        self.plant()
        args = [str(p) for tool, link, _ in self.pairs for p in (tool, link)]
        self.racer = subprocess.Popen([sys.executable, "-c", RACER, str(seconds), *args],
                                      stdout=subprocess.PIPE, text=True)
        assert self.racer.stdout.readline().strip() == "ready"

    def alive(self) -> bool:
        return self.racer is not None and self.racer.poll() is None

    def stop(self) -> int:
        """End the racer; the number of swaps it made (asserted > 0: it really raced)."""
        assert self.racer is not None
        alive = self.alive()
        if alive:
            self.racer.terminate()
        out, _ = self.racer.communicate(timeout=30)
        assert alive, f"the racer was gone before the end (exit {self.racer.returncode})"
        swaps = int(out.split()[-1])
        assert swaps > 0, "the racer never swapped a file"
        return swaps

    def widened(self) -> dict[str, str]:
        modes = {s.name: stat.S_IMODE(s.stat().st_mode) for _, _, s in self.pairs}
        return {name: oct(mode) for name, mode in modes.items() if mode != 0o600}


def test_apply_never_chmods_through_a_swapped_in_symlink(project, tmp_path):
    raced = Raced(project, tmp_path / "outside")
    root = os.fsencode(str(project))
    oid = "0" * 40  # a mode change reads no blob
    plans = [Plan([Action(CHMOD, os.fsencode(tool.name), Entry(os.fsencode(tool.name), oid,
                                                               mode))
                   for tool, _, _ in raced.pairs]) for mode in (EXECUTABLE, 0o100644)]
    rounds = 0
    raced.start(SECONDS + 30)
    try:
        deadline = time.monotonic() + SECONDS
        while rounds < ROUNDS and time.monotonic() < deadline:
            apply(plans[rounds % 2], root, lambda _oid: b"")
            rounds += 1
            if rounds % 10 == 0:
                raced.plant()
                assert not raced.widened(), f"after {rounds} plans: {raced.widened()}"
                assert raced.alive(), "the racer died: the plans ran unraced"
    finally:
        swaps = raced.stop()
    assert not raced.widened(), raced.widened()
    print(f"{rounds} plans x {PAIRS} mode changes raced by {swaps} swaps: nothing outside "
          "the project touched")


def test_restores_never_chmod_through_a_swapped_in_symlink(mgr, project, tmp_path):
    raced = Raced(project, tmp_path / "outside")
    plain = checkpoint(mgr, project, "plain")
    for tool, _, _ in raced.pairs:
        tool.chmod(0o755)
    executable = checkpoint(mgr, project, "executable")
    rounds, refused = 0, []
    raced.start(SECONDS + 30)
    try:
        deadline = time.monotonic() + SECONDS
        while rounds < 200 and time.monotonic() < deadline:
            raced.plant()
            try:
                rs.restore(mgr.store, project, plain if rounds % 2 == 0 else executable)
            except RewindError as exc:  # a capture confused by the swapping, said in one line
                refused.append(str(exc))
            rounds += 1
            assert not raced.widened(), f"after {rounds} restores: {raced.widened()}"
            assert raced.alive(), "the racer died: the restores ran unraced"
    finally:
        swaps = raced.stop()
    assert len(refused) < rounds, f"no restore ran to its end: {refused[:3]}"
    print(f"{rounds} whole restores ({len(refused)} refused) raced by {swaps} swaps: "
          "nothing outside the project touched")
