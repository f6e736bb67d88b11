"""A large capture's second process (store.capture.splitstore) that hangs never hangs the
capture: Ctrl-C kills it first instead of waiting for its share, a deadline ends it
when it makes no progress, and an agent's ensure_checkpoint returns whatever it does.

The child really forks (found by the temp pack it names with its own pid), really
hangs (SIGSTOP: state T in /proc, it can make no progress), and is really killed
(its /proc entry goes away). Every wait has a deadline; a hang fails the test.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import threading
import time
from pathlib import Path

import pygit2
import pytest
from conftest import REWIND, rewind_env
from test_capture_pack import make_project
from test_restore_helpers import manager

from rewindfs.store import project_hash

FILES = 6000  # enough that the child is still storing when it is found
TIMEOUT = 120
# The calling thread blocked in select(2) (splitstore's wait for its child).
SELECT_CALLS = {"x86_64": {"23", "270"}, "aarch64": {"72"}}


def state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def find_and_stop_child(pack_dir: Path, parent: int, alive) -> int:
    """The pid of the capture's forked child (its temp pack names it), stopped."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and alive():
        for tmp in pack_dir.glob("tmp_pack_rewind_*"):
            pid = int(tmp.name.split("_")[3])
            if pid != parent:
                os.kill(pid, signal.SIGSTOP)
                stopped = time.monotonic() + 10
                while state(pid) not in ("T", "t") and time.monotonic() < stopped:
                    time.sleep(0.001)
                assert state(pid) in ("T", "t"), "the child finished before it was stopped"
                return pid
        time.sleep(0.001)
    raise AssertionError("the capture never forked its child")


def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state(pid) in (None, "Z"), f"the child {pid} still runs ({state(pid)})"


def waiting_for_child(pid: int) -> bool:
    """The main thread of `pid` sits in select(2): splitstore's wait for its child."""
    calls = SELECT_CALLS.get(platform.machine())
    if calls is None:
        pytest.skip(f"no select(2) syscall numbers known for {platform.machine()}")
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] in calls
    except (OSError, IndexError):
        return False


def no_temp_packs(store_dir: Path) -> bool:
    return not list((store_dir / "objects" / "pack").glob("tmp_*"))


@pytest.fixture
def big(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    make_project(root, n=FILES)
    return root


@pytest.fixture
def pack_dir(store_dir: Path, tmp_path: Path, run_rewind) -> Path:
    """The store exists (another project's checkpoint), the big project has none yet."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "first.txt").write_text("1\n")
    run_rewind("checkpoint", cwd=other, check=True)
    return store_dir / "objects" / "pack"


def start(big: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([REWIND, "checkpoint", "-m", "big"], cwd=big, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def tip_of(store_dir: Path, project: Path) -> pygit2.Commit | None:
    repo = pygit2.Repository(str(store_dir))
    ref = repo.references.get(f"refs/hermes/{project_hash(project)}")
    return ref.peel(pygit2.Commit) if ref is not None else None


def leave_nothing_running(proc: subprocess.Popen, child: int | None) -> None:
    """Whatever a test left running (the checkpoint, its stopped child) is killed."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    if child is not None and state(child) in ("T", "t"):
        os.kill(child, signal.SIGKILL)


def test_ctrl_c_kills_a_hung_child_first(big, pack_dir, store_dir, home, tmp_path):
    proc = start(big, rewind_env(home, tmp_path / "user-home", REWIND_STALL_SECONDS="600"))
    child = None
    try:
        child = find_and_stop_child(pack_dir, proc.pid, lambda: proc.poll() is None)
        deadline = time.monotonic() + TIMEOUT
        while not waiting_for_child(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waiting_for_child(proc.pid), "the parent never waited for its child"
        assert state(child) in ("T", "t")  # still hung: it would never send its share
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        leave_nothing_running(proc, child)
    assert proc.returncode == 130, err
    assert err.strip() == "rewind: interrupted"
    wait_gone(child)
    assert no_temp_packs(store_dir)
    assert tip_of(store_dir, big) is None  # nothing recorded


@pytest.mark.long
def test_a_hung_child_is_killed_and_its_share_read_by_the_parent(big, pack_dir, store_dir,
                                                                  home, tmp_path):
    proc = start(big, rewind_env(home, tmp_path / "user-home", REWIND_STALL_SECONDS="3"))
    child = None
    try:
        child = find_and_stop_child(pack_dir, proc.pid, lambda: proc.poll() is None)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        leave_nothing_running(proc, child)
    assert proc.returncode == 0, err
    wait_gone(child)
    assert no_temp_packs(store_dir)
    index = pygit2.Index()
    index.read_tree(tip_of(store_dir, big).tree)
    on_disk = sum(len(files) + sum(os.path.islink(os.path.join(d, n)) for n in dirs)
                  for d, dirs, files in os.walk(big))
    assert len(index) == on_disk  # every file, the child's share included


def test_ensure_checkpoint_returns_while_the_child_hangs(big, home):
    mgr = manager(home, checkpoint_stall_seconds=2)
    assert mgr.ensure_checkpoint(str(big / "d0"))  # the store exists
    pack = home / "checkpoints/store/objects/pack"
    found: list[int] = []
    outcome: list[bool] = []
    threading.Thread(target=lambda: found.append(
        find_and_stop_child(pack, os.getpid(), lambda: not outcome)), daemon=True).start()
    caller = threading.Thread(target=lambda: outcome.append(mgr.ensure_checkpoint(str(big))),
                              daemon=True)
    caller.start()
    caller.join(TIMEOUT)
    try:
        assert outcome == [False], "ensure_checkpoint did not return"
        assert found, "the child was never found"
        wait_gone(found[0])  # the cancelled capture killed it
    finally:
        for pid in found:
            if state(pid) in ("T", "t"):
                os.kill(pid, signal.SIGKILL)
    tip = mgr.list_checkpoints(str(big))
    assert tip == []  # nothing recorded for the project it gave up on
    # the worker thread is done: the next turn checkpoints normally
    deadline = time.monotonic() + TIMEOUT
    while mgr._runner.busy(str(big)) and time.monotonic() < deadline:
        time.sleep(0.01)
    mgr.new_turn()
    assert mgr.ensure_checkpoint(str(big))
