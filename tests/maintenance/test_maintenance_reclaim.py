"""Space a person asks for is freed now (issue 14): an explicit prune coordinates with
checkpoint writers instead of waiting out the gc grace period, reports what it freed,
`rewind status` shows what it would free, and a killed gc leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pygit2
from conftest import (
    RACE_COMMITS,
    RACE_DEADLINE,
    REWIND,
    flatten_tree,
    flocks,
    wait_for,
)

from rewindfs.store import Layout, Store, checkpoints, project_hash, take
from rewindfs.store.maintenance import gc, sizes, sweep
from rewindfs.store.maintenance.status import store_status
from rewindfs.store.objects import writers

KB = 1024


def fill(store: Store, wd: Path, count: int, size: int = 100 * KB) -> list[str]:
    wd.mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(count):
        (wd / "data.bin").write_bytes(os.urandom(size))
        made.append(take(store, wd, f"{wd.name} {i}").commit)
    return made


def loose_garbage(layout: Layout, count: int = 20, size: int = 50 * KB) -> list[str]:
    """Objects nothing refers to, just written (like the remains of a refused checkpoint)."""
    repo = pygit2.Repository(str(layout.store))
    return [str(repo.create_blob(os.urandom(size))) for _ in range(count)]


def present(layout: Layout, oids: list[str]) -> list[str]:
    repo = pygit2.Repository(str(layout.store))
    return [o for o in oids if repo.get(o) is not None]


def test_rewind_prune_frees_dropped_checkpoints_now(run_rewind, store, layout, tmp_path, fsck):
    """The reproduced bug: `rewind prune --max-size-mb 1` dropped checkpoints and
    printed `Bytes reclaimed: 0 B` (their objects were younger than the grace period)."""
    made = fill(store, tmp_path / "p", 20)
    before = sizes.objects_bytes(layout)
    assert before > 1900 * KB
    proc = run_rewind("prune", "-f", "--json", "--max-size-mb", "1", check=True)
    report = json.loads(proc.stdout)
    assert report["dropped_checkpoints"] > 0
    assert report["bytes_freed"] > 800 * KB
    assert report["kept_younger_than_minutes"] == 0 and not report["hermes_active"]
    assert sizes.objects_bytes(layout) <= 1024 * KB + 20 * KB
    kept = {c.id for c in checkpoints(Store(layout).repo, project_hash(tmp_path / "p"))}
    assert present(layout, [c for c in made if c not in kept]) == []
    text = run_rewind("prune", "-f", "--max-size-mb", "1", check=True).stdout
    assert "Bytes reclaimed:" in text and "gc did not run" not in text
    fsck()


def test_status_shows_what_prune_would_free(run_rewind, store, layout, tmp_path):
    fill(store, tmp_path / "p", 2)
    assert json.loads(run_rewind("status", "--json", check=True).stdout)["reclaimable_bytes"] \
        < 2 * KB
    garbage = loose_garbage(layout, 10)
    shown = json.loads(run_rewind("status", "--json", check=True).stdout)["reclaimable_bytes"]
    assert shown >= 10 * 50 * KB * 0.9  # random bytes barely compress
    assert "Reclaimable:" in run_rewind("status", check=True).stdout
    report = json.loads(run_rewind("prune", "-f", "--json", check=True).stdout)
    assert report["bytes_freed"] >= shown * 0.9 and present(layout, garbage) == []
    assert store_status(layout, 7).reclaimable_bytes < 2 * KB


def test_automatic_sweep_keeps_its_grace(store, layout, tmp_path):
    fill(store, tmp_path / "p", 1)
    garbage = loose_garbage(layout, 5)
    report = sweep.run(layout, sweep.Policy())  # as the automatic sweep runs it
    assert report.gc_ran and report.kept_younger_than_minutes == gc.GRACE_MINUTES
    assert present(layout, garbage) == garbage
    report = sweep.run(layout, sweep.Policy(reclaim_now=True))
    assert present(layout, garbage) == []


def test_recent_hermes_checkpoint_keeps_young_objects(store, layout, tmp_path):
    """Hermes writes objects without a lock rewindfs can wait on; while it has
    checkpointed within its window (it wrote indexes/), young objects stay."""
    fill(store, tmp_path / "p", 1)
    garbage = loose_garbage(layout, 5)
    index = layout.store / "indexes" / "0123456789abcdef"
    index.parent.mkdir(exist_ok=True)
    index.write_bytes(b"DIRC")
    result = gc.gc(layout, immediate=True)
    assert result.hermes_active and result.kept_younger_than == gc.HERMES_WINDOW_MINUTES
    assert present(layout, garbage) == garbage
    past = time.time() - (gc.HERMES_WINDOW_MINUTES + 1) * 60
    os.utime(index, (past, past))
    result = gc.gc(layout, immediate=True)
    assert not result.hermes_active and result.kept_younger_than == 0
    assert present(layout, garbage) == []


def test_explicit_gc_waits_for_a_writer_in_flight(store, layout, tmp_path):
    """Objects a writer has written but not yet linked survive an explicit gc: the gc
    waits until the writer is done."""
    fill(store, tmp_path / "p", 1)
    inside, release, done = threading.Event(), threading.Event(), threading.Event()
    in_flight: list[str] = []

    def writer() -> None:
        with writers.writing(layout):
            in_flight.extend(loose_garbage(layout, 3))
            inside.set()
            release.wait(30)

    thread = threading.Thread(target=writer)
    thread.start()
    assert inside.wait(30)
    collector = threading.Thread(target=lambda: (gc.gc(layout, immediate=True), done.set()))
    collector.start()
    try:  # the gc holds the gate while it waits for the writers inside: it is waiting
        wait_for(lambda: (False, "WRITE", os.getpid()) in flocks(
            layout.lock_file(writers.GATE)), "the gc to wait for the writer")
        still_waiting = not done.is_set()
        survived = present(layout, in_flight)
    finally:
        release.set()
        thread.join()
        collector.join()
    assert still_waiting and survived == in_flight


def test_writers_do_not_starve_the_gc(store, layout, tmp_path):
    """Checkpoints overlapping without pause: the gate lets the gc in."""
    stop = threading.Event()

    def overlapping(k: int) -> None:
        while not stop.is_set():
            with writers.writing(layout):
                time.sleep(0.05 + 0.01 * k)

    fill(store, tmp_path / "p", 1)
    threads = [threading.Thread(target=overlapping, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        result = gc.gc(layout, immediate=True)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert result.ran and result.kept_younger_than == 0  # not the fallback to the grace


def complete(repo: pygit2.Repository, commit: str) -> bool:
    try:
        flatten_tree(repo, repo[commit].peel(pygit2.Commit).tree)
        return True
    except (KeyError, pygit2.GitError):
        return False


WRITER = """
import os, sys, json
from pathlib import Path
from rewindfs.store import Layout, Store, take
layout, wd, stop = Layout(Path(sys.argv[1])), Path(sys.argv[2]), Path(sys.argv[3])
store = Store(layout)
wd.mkdir(parents=True, exist_ok=True)
i = 0
while not stop.exists():
    (wd / "cycle.txt").write_text(f"version {i % 4}\\n" * 300)
    (wd / f"new{i % 5}.bin").write_bytes(os.urandom(4000))
    result = take(store, wd, f"w {i}", keep=int(sys.argv[4]) or None)
    if result.taken:
        print(result.commit, flush=True)
    i += 1
"""


def test_immediate_reclaim_with_writers_running_loses_nothing(store, layout, tmp_path, fsck):
    """Writer loops (threads and a separate process, some at max_snapshots so garbage keeps
    appearing) while explicit prunes free everything unreachable, again and again: every
    checkpoint a writer reported is complete afterwards, the pruned ones are really gone,
    and git fsck is clean."""
    store.ensure()
    stop_file = tmp_path / "stop"
    procs = {name: subprocess.Popen(
        [sys.executable, "-c", WRITER, str(layout.base), str(tmp_path / name), str(stop_file),
         str(keep)], stdout=subprocess.PIPE, text=True)
        for name, keep in (("proc-all", 0), ("proc-kept", 3))}
    stop = threading.Event()
    reported: dict[str, list[str]] = {}
    errors: list[str] = []

    def writer(name: str, keep: int | None) -> None:
        wd = tmp_path / name
        wd.mkdir()
        local = Store(layout)
        i = 0
        try:
            while not stop.is_set():
                (wd / "cycle.txt").write_text(f"version {i % 5}\n" * 200)
                (wd / f"new{i % 7}.bin").write_bytes(os.urandom(3000))
                result = take(local, wd, f"{name} {i}", keep=keep)
                if result.taken:
                    reported.setdefault(name, []).append(result.commit)
                i += 1
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"{name}: {exc!r}")

    runs: list[sweep.Report] = []

    def pruner() -> None:
        while not stop.is_set() or len(runs) < 3:
            try:
                runs.append(sweep.run(layout, sweep.Policy(reclaim_now=True,
                                                           max_total_size_mb=0)))
            except Exception as exc:  # noqa: BLE001
                errors.append(f"prune: {exc!r}")

    threads = [threading.Thread(target=writer, args=(name, keep))
               for name, keep in (("t-all", None), ("t-kept", 2))]
    threads.append(threading.Thread(target=pruner))
    for t in threads:
        t.start()
    lines = {name: [] for name in procs}  # what the processes reported so far
    readers = [threading.Thread(target=lambda n=name, p=proc: lines[n].extend(
        iter(p.stdout.readline, ""))) for name, proc in procs.items()]
    for t in readers:
        t.start()
    try:
        wait_for(lambda: errors or (len(runs) >= 3 and all(
            len(reported.get(n, [])) >= RACE_COMMITS for n in ("t-all", "t-kept")) and all(
            len(got) >= RACE_COMMITS for got in lines.values())),
            f"{RACE_COMMITS} checkpoints per writer and 3 prunes", RACE_DEADLINE)
    finally:
        stop.set()
        stop_file.write_text("stop")
        for t in threads:
            t.join(120)
    for name, proc in procs.items():
        assert proc.wait(timeout=120) == 0, name
    for t in readers:
        t.join(60)
    for name, got in lines.items():
        reported[name] = [line.strip() for line in got]
    assert not errors, errors[:3]
    assert len(runs) >= 3 and all(r.gc_ran and r.kept_younger_than_minutes == 0 for r in runs)
    repo = pygit2.Repository(str(layout.store))
    for name in ("t-all", "proc-all"):  # nothing pruned: every reported checkpoint is whole
        lost = [c for c in reported[name] if not complete(repo, c)]
        assert not lost, f"{name}: {len(lost)} of {len(reported[name])} checkpoints lost"
    for name, keep in (("t-kept", 2), ("proc-kept", 3)):
        history = [c.id for c in checkpoints(repo, project_hash(tmp_path / name))]
        assert history == list(reversed(reported[name][-keep:])), name
        assert all(complete(repo, c) for c in history)
    sweep.run(layout, sweep.Policy(reclaim_now=True, max_total_size_mb=0))
    repo = pygit2.Repository(str(layout.store))
    for name in ("t-kept", "proc-kept"):  # dropped checkpoints are gone now, not in 15 min
        assert repo.get(reported[name][0]) is None, name
    fsck()


# -- placeholders of a killed gc -----------------------------------------------------------

SLOW_GIT = """#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = repack ]; then touch "$SLOW_GIT_MARK"; sleep 60; fi
done
exec {git} "$@"
"""

GC_CHILD = """
import sys
from pathlib import Path
from rewindfs.store import Layout
from rewindfs.store.maintenance import gc
gc.gc(Layout(Path(sys.argv[1])), 0)
"""


def test_placeholders_of_a_killed_gc_are_cleaned_up(store, layout, tmp_path, store_git, fsck):
    fill(store, tmp_path / "p", 2)
    shim = tmp_path / "bin"
    shim.mkdir()
    real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True,
                              text=True).stdout.strip()
    (shim / "git").write_text(SLOW_GIT.format(git=real_git))
    (shim / "git").chmod(0o755)
    mark = tmp_path / "repacking"
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "SLOW_GIT_MARK": str(mark)}
    child = subprocess.Popen([sys.executable, "-c", GC_CHILD, str(layout.base)], env=env,
                             start_new_session=True)
    deadline = time.monotonic() + 60
    while not mark.exists():
        assert time.monotonic() < deadline and child.poll() is None, "gc never got to repack"
        time.sleep(0.02)
    os.killpg(child.pid, signal.SIGKILL)  # the gc and its git, as a killed terminal would
    child.wait()
    left = list((layout.store / "objects").glob(f"??/{gc.PLACEHOLDER}"))
    assert len(left) == 256
    assert "bad sha1 file" in store_git("fsck", check=False).stderr
    report = sweep.run(layout, sweep.Policy(), always_gc=False, last_sweep=time.time())
    assert report.placeholders_removed == 256 and not report.gc_ran
    assert list((layout.store / "objects").glob(f"??/{gc.PLACEHOLDER}")) == []
    fsck()


def test_placeholders_of_a_running_gc_are_left_to_it(store, layout, tmp_path):
    fill(store, tmp_path / "p", 1)
    from rewindfs.store.objects.locks import file_lock

    pin = layout.store / "objects" / "00" / gc.PLACEHOLDER
    pin.parent.mkdir(exist_ok=True)
    pin.touch()
    with file_lock(layout.lock_file("gc")):
        assert gc.clear_placeholders(layout) == 0 and pin.exists()
    assert gc.clear_placeholders(layout) == 1 and not pin.exists()


def test_clear_waits_for_a_writer(store, layout, tmp_path, child_env):
    fill(store, tmp_path / "p", 1)
    inside, release = threading.Event(), threading.Event()

    def writer() -> None:
        with writers.writing(layout):
            inside.set()
            release.wait(30)

    thread = threading.Thread(target=writer)
    thread.start()
    assert inside.wait(30)
    clearing = subprocess.Popen([REWIND, "clear", "-f"], env=child_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=tmp_path)
    try:  # clear holds the gate while it waits for the writer inside: it is waiting
        wait_for(lambda: (False, "WRITE", clearing.pid) in flocks(
            layout.lock_file(writers.GATE)), "clear to wait for the writer")
        waited = clearing.poll() is None and layout.base.exists()
    finally:
        release.set()
        thread.join()
    out, err = clearing.communicate(timeout=60)
    assert waited and clearing.returncode == 0, (out, err)
    assert not layout.base.exists()
    # the writer that waited starts a new store
    assert take(Store(layout), tmp_path / "p", "after clear").taken
