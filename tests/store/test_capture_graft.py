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
import shutil
import stat
from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewindfs.store import Layout, Limits, Store
from rewindfs.store.capture import changesource
from rewindfs.store.capture.changesource import Plan
from rewindfs.store.capture.graft import IGNORE_FILES, Since
from rewindfs.store.capture.workdir import capture
from rewindfs.store.history.snapshot import locked

LIMITS = Limits(max_file_size=4000, max_files=100_000)
NAMES = ["a", "b", "c", "A", "src", "lib", "node_modules", "build", "x.py", "y.txt",
         "caf\udce9", "deep", ".hidden", "z.log"]


class Watch:
    def __init__(self) -> None:
        self.since: Since | None = None
        self.caps: list = []

    def begin(self, workdir, limits):
        return Plan(self.since, "token")

    def done(self, workdir, token, limits, cap):
        self.caps.append(cap)


class Ops:
    """File operations on a project, each noting the paths it changed (as inotify
    would name them: the entry changed, in its parent)."""

    def __init__(self, root: Path, rnd: random.Random):
        self.root, self.rnd, self.changed = root, rnd, set()

    def rel(self, path: Path) -> bytes:
        return os.fsencode(os.path.relpath(path, self.root))

    def entries(self, dirs: bool | None = None) -> list[Path]:
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in dirnames if dirs is not False else []:
                out.append(Path(dirpath) / name)
            for name in filenames if dirs is not True else []:
                out.append(Path(dirpath) / name)
        return sorted(out)

    def new_path(self) -> Path:
        parts = [self.rnd.choice(NAMES) for _ in range(self.rnd.randint(1, 4))]
        return self.root.joinpath(*parts)

    def make_parents(self, path: Path) -> bool:
        """Create `path`'s missing parents, noting the topmost one created; False when a
        parent is a file or a link."""
        top = None
        for parent in reversed(path.relative_to(self.root).parents[:-1]):
            full = self.root / parent
            if full.is_symlink() or (full.exists() and not full.is_dir()):
                return False
            if not full.exists():
                full.mkdir()
                top = top or full
        if top is not None:
            self.changed.add(self.rel(top))
        return True

    def data(self) -> bytes:
        size = self.rnd.choice([0, 1, 10, 100, 3999, 4000, 4001, 9000])
        return bytes(self.rnd.getrandbits(8) for _ in range(min(size, 64))) * (size // 64 + 1)

    def run(self, op: str) -> None:
        getattr(self, op)()

    def create(self) -> None:
        path = self.new_path()
        if path.exists() or path.is_symlink() or not self.make_parents(path):
            return
        path.write_bytes(self.data()[: self.rnd.choice([0, 5, 5000])])
        self.changed.add(self.rel(path))

    def modify(self) -> None:
        files = [p for p in self.entries(dirs=False) if not p.is_symlink()]
        if files:
            path = self.rnd.choice(files)
            path.write_bytes(self.data())
            self.changed.add(self.rel(path))

    def delete(self) -> None:
        files = self.entries(dirs=False)
        if files:
            path = self.rnd.choice(files)
            path.unlink()
            self.changed.add(self.rel(path))

    def rmtree(self) -> None:
        dirs = [p for p in self.entries(dirs=True) if not p.is_symlink()]
        if dirs:
            path = self.rnd.choice(dirs)
            shutil.rmtree(path)
            self.changed.add(self.rel(path))

    def rename(self) -> None:
        entries = self.entries()
        if not entries:
            return
        src = self.rnd.choice(entries)
        dst = self.new_path() if self.rnd.random() < 0.7 else src.with_name(src.name.swapcase())
        if dst.exists() or dst.is_symlink() or dst == src or src in dst.parents:
            return
        if not self.make_parents(dst):
            return
        os.rename(src, dst)
        self.changed.update({self.rel(src), self.rel(dst)})

    def chmod(self) -> None:
        files = [p for p in self.entries(dirs=False) if not p.is_symlink()]
        if files:
            path = self.rnd.choice(files)
            path.chmod(path.stat().st_mode ^ stat.S_IXUSR)
            self.changed.add(self.rel(path))

    def symlink(self) -> None:
        path = self.new_path()
        if path.exists() or path.is_symlink() or not self.make_parents(path):
            return
        os.symlink(self.rnd.choice(["x.py", "../a", "/etc/passwd", "src"]), path)
        self.changed.add(self.rel(path))

    def replace(self) -> None:
        """A file becomes a directory (with a file in it) or a directory a file."""
        entries = [p for p in self.entries() if not p.is_symlink()]
        if not entries:
            return
        path = self.rnd.choice(entries)
        if path.is_dir():
            shutil.rmtree(path)
            path.write_bytes(b"now a file\n")
        else:
            path.unlink()
            path.mkdir()
            (path / "inside.txt").write_bytes(b"inside\n")
        self.changed.add(self.rel(path))

    def nested_repo(self) -> None:
        dirs = [p for p in self.entries(dirs=True) if not p.is_symlink()]
        if dirs:
            path = self.rnd.choice(dirs)
            if not (path / ".git").exists():
                pygit2.init_repository(str(path))
                self.changed.add(self.rel(path / ".git"))


OPS = ["create", "create", "modify", "modify", "delete", "rmtree", "rename", "rename",
       "chmod", "symlink", "replace", "nested_repo"]


def _capture(store: Store, workdir: Path, watch: Watch | None):
    changesource.register(watch)
    try:
        with locked(store, workdir) as project:
            store.refresh_excludes(project, ())
            return capture(project, LIMITS)
    finally:
        changesource.register(None)


def _start(root: Path, rnd: random.Random) -> None:
    ops = Ops(root, rnd)
    for _ in range(25):
        ops.create()
    (root / ".gitignore").write_text("*.log\nignored/\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=12))
def test_graft_equals_walk(tmp_path_factory, seed, ops):
    base = tmp_path_factory.mktemp("graft")
    root = base / "proj"
    root.mkdir()
    store = Store(Layout(base / "home" / "checkpoints"))
    rnd = random.Random(seed)
    _start(root, rnd)
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
