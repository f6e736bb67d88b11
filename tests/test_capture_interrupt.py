"""Ctrl-C during a long first checkpoint: a real SIGINT to a real `rewind checkpoint`
on a terminal stops it, prints one line, exits 130, and leaves store and index
consistent (git fsck clean, the next checkpoint takes everything)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pygit2
import pytest
from conftest import REWIND

from rewindfs.store import project_hash

FILES = 6000
DEADLINE = 120  # a hang guard, not a timing assertion


def big_project(root: Path) -> None:
    for i in range(FILES):
        d = root / f"d{i % 40}" / f"s{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_bytes((f"line {i} " * 200 + "\n").encode())


def read_until(master: int, needle: bytes, seen: bytearray) -> bool:
    """Read the terminal until `needle` shows up (True) or the process closes it."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            return False
        if not chunk:
            return False
        seen += chunk
        if needle in seen:
            return True
    raise AssertionError(f"no {needle!r} on the terminal: {bytes(seen[-500:])!r}")


def drain(master: int, seen: bytearray) -> None:
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            return
        try:
            chunk = os.read(master, 65536)
        except OSError:
            return
        if not chunk:
            return
        seen += chunk


@pytest.mark.parametrize("progress", [b"scanning:", b"capturing:"])
def test_ctrl_c_stops_a_long_first_checkpoint(progress, home, tmp_path, store_dir, fsck,
                                              run_rewind, files_of):
    proj = tmp_path / "proj"
    big_project(proj)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    env.update(HERMES_HOME=str(home), HOME=str(tmp_path), LC_ALL="C.UTF-8")
    master, slave = pty.openpty()  # progress (and the error line) go to a terminal
    proc = subprocess.Popen([REWIND, "checkpoint", str(proj)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = bytearray()
    try:
        assert read_until(master, progress, seen), bytes(seen)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=DEADLINE)
        drain(master, seen)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = bytes(seen).decode(errors="replace")
    assert proc.returncode == 130, text
    assert text.rstrip().endswith("rewind: interrupted"), text
    assert "Traceback" not in text and "Exception ignored" not in text, text
    # nothing recorded, nothing damaged; the next checkpoint takes everything
    repo = pygit2.Repository(str(store_dir))
    assert repo.references.get(f"refs/hermes/{project_hash(proj)}") is None
    fsck()
    again = run_rewind("checkpoint", proj, "--json")
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out["taken"]
    assert len(files_of(out["hash"])) == FILES
    fsck()
