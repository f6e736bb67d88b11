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
from conftest import REWIND, rewind_env

from rewindfs.store import project_hash

FILES = 20_000
DEADLINE = 120  # a hang guard, not a timing assertion


@pytest.fixture(scope="module")
def big_project(tmp_path_factory) -> Path:
    """Big enough that a first checkpoint takes a while (read-only: each test has its
    own store)."""
    root = tmp_path_factory.mktemp("interrupt") / "proj"
    for i in range(FILES):
        d = root / f"d{i % 40}" / f"s{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_bytes((f"line {i} " * 800 + "\n").encode())
    return root


def wait_for(found, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if found():
            return
        time.sleep(0.002)
    raise AssertionError(f"never saw {what}")


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


@pytest.mark.parametrize("phase", ["walking", "storing"])
def test_ctrl_c_stops_a_long_first_checkpoint(phase, big_project, home, tmp_path,
                                              store_dir, fsck, run_rewind, files_of):
    """SIGINT while libgit2 walks the tree (its callbacks used to swallow it), or while
    the files are read and packed."""
    proj = big_project
    admin = store_dir / "worktrees" / project_hash(proj)
    pack_dir = store_dir / "objects" / "pack"
    env = rewind_env(home, tmp_path / "user-home")
    master, slave = pty.openpty()  # on a terminal, as a person runs it (progress shown)
    proc = subprocess.Popen([REWIND, "checkpoint", str(proj)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = bytearray()
    try:
        if phase == "walking":  # the exclude file is written just before the walk
            wait_for(lambda: (admin / "exclude").exists(), "the walk start")
        else:  # a pack being written
            wait_for(lambda: any(pack_dir.glob("tmp_pack_*")), "a pack being written")
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
    # nothing recorded, nothing damaged, no temp pack of either process left behind;
    # the next checkpoint takes everything
    assert not list(pack_dir.glob("tmp_*"))
    repo = pygit2.Repository(str(store_dir))
    assert repo.references.get(f"refs/hermes/{project_hash(proj)}") is None
    fsck()
    again = run_rewind("checkpoint", proj, "--json")
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out["taken"]
    assert len(files_of(out["hash"])) == FILES
    fsck()
