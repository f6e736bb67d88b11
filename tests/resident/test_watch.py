"""The resident process's watch (rewindfs.resident.watch) held to the walk: random
sequences of file operations, a capture from what the watch saw after each, compared with
a walk of the whole tree; and each way the watch stops being trusted, shown to happen
before the capture that walks instead is checked."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fileops import OPS, Ops, start
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewindfs.resident.source import Local
from rewindfs.resident.watch import LOST, READY, Watcher
from rewindfs.store import Layout, Limits, Store
from rewindfs.store.capture import changesource
from rewindfs.store.capture.workdir import capture
from rewindfs.store.history.snapshot import locked

LIMITS = Limits(max_file_size=4000, max_files=100_000)
WATCH_OPS = [*OPS, "ignore_edit"]


def state_of(watcher: Watcher, root: Path) -> str:
    for found in watcher.status():
        if found["root"] == str(root):
            return found["state"]
    return ""


def wait_state(watcher: Watcher, root: Path, want: str) -> None:
    deadline = time.monotonic() + 60
    while state_of(watcher, root) != want:
        assert time.monotonic() < deadline, f"the watch never became {want}"
        time.sleep(0.01)


def cap(store: Store, root: Path, watcher: Watcher | None):
    changesource.register(Local(watcher) if watcher is not None else None)
    try:
        with locked(store, root) as project:
            store.refresh_excludes(project, ())
            return capture(project, LIMITS)
    finally:
        changesource.register(None)


class Setup:
    def __init__(self, base: Path):
        self.root = base / "proj"
        self.root.mkdir()
        (base / "cookies").mkdir()
        self.store = Store(Layout(base / "home" / "checkpoints"))
        self.watcher = Watcher(base / "cookies")

    def watched(self) -> None:
        """The watch set up and a first capture taken from it: the base."""
        first = cap(self.store, self.root, self.watcher)   # asks: the watch starts
        assert not first.grafted
        wait_state(self.watcher, self.root, READY)
        base = cap(self.store, self.root, self.watcher)    # after it: the base
        assert not base.grafted

    def check(self, expect_graft: bool = True):
        watched = cap(self.store, self.root, self.watcher)
        walked = cap(self.store, self.root, None)
        assert watched.tree_id == walked.tree_id
        assert watched.file_count == walked.file_count
        assert sorted(watched.oversize) == sorted(walked.oversize)
        if expect_graft:
            assert watched.grafted
        return watched


@pytest.fixture
def setup(tmp_path: Path):
    made = Setup(tmp_path)
    yield made
    made.watcher.close()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32),
       rounds=st.lists(st.lists(st.sampled_from(WATCH_OPS), min_size=1, max_size=8),
                       min_size=1, max_size=4))
def test_watched_capture_equals_walk(tmp_path_factory, seed, rounds):
    made = Setup(tmp_path_factory.mktemp("watch"))
    try:
        rnd = random.Random(seed)
        start(made.root, rnd)
        made.watched()
        for ops in rounds:
            todo = Ops(made.root, rnd)
            for op in ops:
                todo.run(op)
            rules = any(os.path.basename(p) in (b".gitignore", b".rewindignore")
                        for p in todo.changed)
            made.check(expect_graft=not rules)
    finally:
        made.watcher.close()


def test_a_burst_past_the_event_queue_walks(setup: Setup) -> None:
    """The kernel drops events past its queue (max_queued_events): the watch is lost
    and the next capture walks, and is right."""
    (setup.root / "d").mkdir()
    setup.watched()
    queue = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    with setup.watcher.lock:   # the reader stalls on it: the kernel's queue fills up
        for i in range(queue // 2 + 100):
            path = setup.root / "d" / f"f{i % 50}"
            path.write_bytes(b"%d\n" % i)   # two events each: modify, close-write
        (setup.root / "late.txt").write_text("after the overflow\n")
    deadline = time.monotonic() + 60
    while state_of(setup.watcher, setup.root) != LOST:
        assert time.monotonic() < deadline, "the overflow was never seen"
        time.sleep(0.01)
    assert "overflowed" in setup.watcher.status()[0]["why"]
    setup.check(expect_graft=False)
    wait_state(setup.watcher, setup.root, READY)   # watched again from scratch
    cap(setup.store, setup.root, setup.watcher)    # the new base
    (setup.root / "late.txt").write_text("changed again\n")
    setup.check()


def test_writes_during_a_capture(setup: Setup) -> None:
    """Files written while a capture from the watch runs: that capture takes them or
    not, and the next one is the walk's."""
    (setup.root / "w").mkdir()
    for i in range(300):
        (setup.root / "w" / f"{i}.txt").write_text("x" * 100)
    setup.watched()
    stop = threading.Event()
    wrote = []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            (setup.root / "w" / f"{i % 300}.txt").write_text(f"v{i}\n")
            wrote.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(wrote) < 50:
            time.sleep(0.001)
        during = cap(setup.store, setup.root, setup.watcher)
        assert during.grafted
    finally:
        stop.set()
        thread.join()
    assert len(wrote) > 50   # the writer ran during the capture
    setup.check()


def test_the_project_directory_moved_walks(setup: Setup, tmp_path: Path) -> None:
    (setup.root / "a.txt").write_text("a\n")
    setup.watched()
    os.rename(setup.root, tmp_path / "elsewhere")
    (tmp_path / "elsewhere").rename(setup.root)
    deadline = time.monotonic() + 60
    while state_of(setup.watcher, setup.root) != LOST:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert "moved or removed" in setup.watcher.status()[0]["why"]
    setup.check(expect_graft=False)


def _lost_with(setup: Setup, words: str) -> None:
    deadline = time.monotonic() + 60
    while state_of(setup.watcher, setup.root) != LOST:
        assert time.monotonic() < deadline, f"the watch was never lost ({words})"
        cap(setup.store, setup.root, setup.watcher)   # (asks: starts it again after a loss)
        time.sleep(0.05)
    assert words in setup.watcher.status()[0]["why"], setup.watcher.status()


def test_another_filesystem_inside_the_project_walks(setup: Setup) -> None:
    """A filesystem mounted inside the project (here a tmpfs): its changes may send no
    events to the watch of the tree around it; every capture walks."""
    inner = setup.root / "scratch"
    inner.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(inner)], check=True)
    try:
        (inner / "a.txt").write_text("on the tmpfs\n")
        cap(setup.store, setup.root, setup.watcher)   # asks: the watch starts, finds it
        _lost_with(setup, "scratch is another filesystem")
        (inner / "a.txt").write_text("changed on the tmpfs\n")
        setup.check(expect_graft=False)
    finally:
        subprocess.run(["umount", str(inner)], check=True)


def test_a_project_on_fuse_walks(store, project: Path, mount, run_rewind, tmp_path: Path
                                 ) -> None:
    """A project on a FUSE filesystem (here a checkpoint of rewind's own mount): changes
    made behind it send no events; it is never watched."""
    (project / "a.txt").write_text("a\n")
    assert run_rewind("checkpoint", cwd=project).returncode == 0
    mnt = mount()
    inside = (next(p for p in mnt.iterdir() if p.is_dir()) / "1").resolve()
    (tmp_path / "cookies").mkdir()
    watcher = Watcher(tmp_path / "cookies")
    try:
        key = os.fsencode(str(inside))
        watcher.plan(key, (LIMITS.max_file_size, LIMITS.max_files))
        deadline = time.monotonic() + 60
        while watcher.projects[key].state != LOST:
            assert time.monotonic() < deadline, watcher.status()
            time.sleep(0.02)
        assert "fuse.rewindfs filesystem" in watcher.projects[key].why
        assert watcher.plan(key, (LIMITS.max_file_size, LIMITS.max_files))[2] is None  # walks
    finally:
        watcher.close()
        run_rewind("umount", str(mnt))


WATCH_LIMIT = r"""
import os, sys, time
from pathlib import Path
from rewindfs.resident.watch import Watcher
Path('/proc/sys/user/max_inotify_watches').write_text('10\n')
root, cookies = sys.argv[1], sys.argv[2]
watcher = Watcher(Path(cookies))
key = os.fsencode(root)
watcher.plan(key, (1000, 1000))
deadline = time.monotonic() + 60
while watcher.projects[key].state == 'starting' and time.monotonic() < deadline:
    time.sleep(0.02)
print(watcher.projects[key].state, watcher.projects[key].why)
"""


def test_the_watch_limit_reached_walks(tmp_path: Path) -> None:
    """More directories than the user may watch (a user namespace whose limit is 10): the
    watch is lost, saying which limit, and the project's captures walk."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed: no user namespace for the limit")
    root = tmp_path / "proj"
    for i in range(30):
        (root / f"d{i}").mkdir(parents=True)
    (tmp_path / "cookies").mkdir()
    out = subprocess.run(["unshare", "--user", "--map-root-user", sys.executable, "-c",
                          WATCH_LIMIT, str(root), str(tmp_path / "cookies")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("lost the watch limit was reached"), out.stdout
    assert "max_user_watches" in out.stdout


def test_too_many_changes_walk(setup: Setup, monkeypatch) -> None:
    """More paths changed than the watch keeps (MAX_CHANGED, here lowered for the test):
    it lets go of them, and the next capture walks."""
    from rewindfs.resident import watch

    monkeypatch.setattr(watch, "MAX_CHANGED", 50)
    (setup.root / "many").mkdir()
    setup.watched()
    for i in range(60):
        (setup.root / "many" / f"{i}.txt").write_text(f"{i}\n")
    # (no capture while waiting: one would take the changes so far, and the rest stay few)
    deadline = time.monotonic() + 60
    while state_of(setup.watcher, setup.root) != LOST:
        assert time.monotonic() < deadline, "the watch was never lost (60 paths changed)"
        time.sleep(0.05)
    assert "more than 50 paths changed" in setup.watcher.status()[0]["why"]
    setup.check(expect_graft=False)
