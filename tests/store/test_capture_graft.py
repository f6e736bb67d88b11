"""A capture from a watch's changed paths (store.capture.graft) gives the tree a walk of
the whole project gives: random sequences of file operations, each path an operation
touches named as inotify names it, the grafted tree compared with the walked one.

The watch itself (rewindfs.resident.watch) is held to the same walk in
tests/resident; here the changed paths come from the operations, so what is tested is
the graft alone.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from fileops import OPS, Ops, start
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewindfs.store import Layout, Limits, Store
from rewindfs.store.capture import changesource
from rewindfs.store.capture.changesource import Plan
from rewindfs.store.capture.graft import IGNORE_FILES, Since
from rewindfs.store.capture.workdir import capture
from rewindfs.store.history.snapshot import locked

LIMITS = Limits(max_file_size=4000, max_files=100_000)


class Watch:
    def __init__(self) -> None:
        self.since: Since | None = None
        self.caps: list = []

    def begin(self, workdir, limits):
        return Plan(self.since, "token")

    def done(self, workdir, token, limits, cap):
        self.caps.append(cap)


def _capture(store: Store, workdir: Path, watch: Watch | None):
    changesource.register(watch)
    try:
        with locked(store, workdir) as project:
            store.refresh_excludes(project, ())
            return capture(project, LIMITS)
    finally:
        changesource.register(None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=12))
def test_graft_equals_walk(tmp_path_factory, seed, ops):
    base = tmp_path_factory.mktemp("graft")
    root = base / "proj"
    root.mkdir()
    store = Store(Layout(base / "home" / "checkpoints"))
    rnd = random.Random(seed)
    start(root, rnd)
    watch = Watch()
    first = _capture(store, root, watch)
    assert not first.grafted and watch.caps == [first]
    todo = Ops(root, rnd)
    for op in ops:
        todo.run(op)
    watch.since = Since(first.tree_id.raw, first.file_count, LIMITS, tuple(todo.changed),
                        first.skipped())
    grafted = _capture(store, root, watch)
    walked = _capture(store, root, None)
    rules_changed = any(p.rpartition(b"/")[2] in IGNORE_FILES for p in todo.changed)
    assert grafted.grafted != rules_changed, f"grafted {grafted.grafted} after {ops}"
    assert grafted.tree_id == walked.tree_id, ops
    assert grafted.file_count == walked.file_count
    assert sorted(grafted.oversize) == sorted(walked.oversize)
    assert watch.caps[-1] is grafted  # reported back: the next capture's base


def test_graft_keeps_names_that_are_not_utf8(tmp_path):
    root = tmp_path / "proj"
    (root / "d").mkdir(parents=True)
    (root / os.fsdecode(b"caf\xe9")).write_bytes(b"1\n")
    (root / "d" / "keep.txt").write_bytes(b"keep\n")
    store = Store(Layout(tmp_path / "home" / "checkpoints"))
    watch = Watch()
    first = _capture(store, root, watch)
    (root / os.fsdecode(b"caf\xe9")).write_bytes(b"2\n")
    watch.since = Since(first.tree_id.raw, first.file_count, LIMITS, (b"caf\xe9",))
    grafted = _capture(store, root, watch)
    assert grafted.grafted
    assert grafted.tree_id == _capture(store, root, None).tree_id


@pytest.mark.parametrize("changed", [b".gitignore", b"sub/.rewindignore", b""])
def test_graft_walks_when_rules_may_have_changed(tmp_path, changed):
    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.log").write_bytes(b"log\n")
    (root / ".gitignore").write_text("*.log\n")
    store = Store(Layout(tmp_path / "home" / "checkpoints"))
    watch = Watch()
    first = _capture(store, root, watch)
    (root / ".gitignore").write_text("*.txt\n")
    watch.since = Since(first.tree_id.raw, first.file_count, LIMITS, (changed,))
    again = _capture(store, root, watch)
    assert not again.grafted
    assert again.tree_id == _capture(store, root, None).tree_id
