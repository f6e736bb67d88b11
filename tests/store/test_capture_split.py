"""A large capture stored on two cores (store.capture.splitstore): a forked child stores part of
the files into a pack of its own. What it must keep: the same checkpoint as one process
would take, and nothing lost or left behind when the child fails, is killed, or its
parent dies."""

from __future__ import annotations

import gc
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from test_capture_pack import git_tree_of, make_project, packs, tree_files

from rewindfs.store import take
from rewindfs.store.capture import splitstore

FILES = 400


@pytest.fixture
def split_small(monkeypatch):
    """Use the child for a few hundred files (the default needs a thousand)."""
    monkeypatch.setattr(splitstore, "MIN_FILES", 100)
    monkeypatch.setattr(splitstore, "_cores", lambda: 2)


def expected_files(files: dict[str, bytes]) -> dict[bytes, tuple[int, bytes]]:
    out = {os.fsencode(rel): (0o100644, data) for rel, data in files.items()}
    out[b"run.sh"] = (0o100755, files["run.sh"])
    out[b"link"] = (0o120000, b"d0/sub0/f0.txt")
    return out


def check_exact(store_dir: Path, result, files, proj: Path, tmp_path: Path) -> None:
    repo = pygit2.Repository(str(store_dir))
    assert tree_files(repo, repo[result.commit].peel(pygit2.Commit).tree) == \
        expected_files(files)
    assert result.tree == git_tree_of(proj, tmp_path)
    assert not list((store_dir / "objects" / "pack").glob("tmp_*"))


@pytest.fixture
def helpers(monkeypatch) -> list[splitstore.Helper | None]:
    """Every Helper.start's answer, to see what became of the child."""
    started: list[splitstore.Helper | None] = []
    real = splitstore.Helper.start.__func__

    def start(cls, *args):
        started.append(real(cls, *args))
        return started[-1]
    monkeypatch.setattr(splitstore.Helper, "start", classmethod(start))
    return started


def test_split_capture_is_the_checkpoint_one_process_takes(split_small, helpers, store,
                                                           tmp_path, store_dir, fsck,
                                                           store_git, caplog):
    caplog.set_level(logging.INFO, logger=splitstore.__name__)  # why there was no child
    proj = tmp_path / "proj"
    files = make_project(proj, n=FILES)
    assert splitstore.worth_it([(b"", os.lstat(proj))] * 200, 0)
    result = take(store, proj, "first")
    assert result.taken
    # the child stored its share: not given up (the parent would have stored it too)
    assert len(helpers) == 1 and helpers[0] is not None, f"no child: {caplog.text}"
    assert helpers[0].gave_up is None, f"the child was given up: {helpers[0].gave_up}"
    assert len(packs(store_dir)) == 3  # the parent's blobs, the child's blobs, the trees
    for pack in packs(store_dir):
        store_git("verify-pack", str(pack.with_suffix(".idx")))
    fsck()
    check_exact(store_dir, result, files, proj, tmp_path)
    # the stat cache holds the child's files too: nothing is found changed next time
    index = store_dir / "worktrees" / result.project / "index"
    before = index.read_bytes()
    assert not take(store, proj, "again").taken
    assert index.read_bytes() == before


class _Garbage:
    """A cycle (so only the garbage collector frees it) whose finalizer leaves its pid."""

    def __init__(self, marks: Path):
        self.marks, self.me = marks, self

    def __del__(self):
        (self.marks / str(os.getpid())).touch()


def test_the_child_never_finalizes_the_parents_garbage(monkeypatch, store_dir, tmp_path):
    """Garbage not yet collected when the child is forked (an agent's temp directory, a
    file with buffered writes) is the parent's: finalized in the child, it would be
    finalized twice (the directory removed under the parent, the buffer written twice).
    A capture runs with the collector off anyway (capture.workdir); the helper must not
    depend on it, so it is started here with the collector on."""
    proj = tmp_path / "proj"
    files = make_project(proj, n=FILES)
    items = [(os.fsencode(rel), os.lstat(proj / rel)) for rel in sorted(files)]
    marks = tmp_path / "finalized"
    marks.mkdir()
    real_fork = os.fork

    def fork():
        garbage = _Garbage(marks)
        pid = real_fork()
        del garbage  # garbage in both processes now: a cycle, left to the collector
        return pid
    monkeypatch.setattr(os, "fork", fork)
    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # a collection at (nearly) every allocation, the child's included
    try:
        assert gc.isenabled()
        helper = splitstore.Helper.start(store_dir / "objects", os.fsencode(proj), items,
                                         1 << 30)
        assert helper is not None and gc.isenabled()  # the parent collects again
        results = helper.results(lambda: None)
    finally:
        gc.set_threshold(*thresholds)
    # the child stored every file (each allocation a collection, were it on) and was reaped
    assert results is not None and len(results) == len(items) and helper._reaped
    helper.publish()
    gc.collect()
    assert sorted(p.name for p in marks.iterdir()) == [str(os.getpid())]


def _forked_child_says_so() -> None:
    """Called in the forked child: leaves its pid behind, so the test knows it ran."""
    CHILD_MARK[0].write_text(str(os.getpid()))


def _failing_child(*_args):
    _forked_child_says_so()
    os._exit(1)


def _child_killed_after_sealing(real_seal):
    def seal(self):
        name = real_seal(self)
        if os.getpid() != PARENT[0]:  # in the child: its temp pack and idx are complete
            _forked_child_says_so()
            os.kill(os.getpid(), signal.SIGKILL)
        return name
    return seal


PARENT = [0]
CHILD_MARK = [Path()]


def _child_raises(parent):
    _forked_child_says_so()
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("how, why", [
    ("fails at once", "it ended (exit status 1) without its whole answer"),
    ("raises", "it failed: OSError: [Errno 28] No space left on device"),
    ("killed with a sealed pack", "it ended (killed by signal 9) without its whole answer"),
])
def test_a_failed_child_share_is_stored_by_the_parent(how, why, split_small, helpers,
                                                      monkeypatch, store, tmp_path,
                                                      store_dir, fsck):
    proj = tmp_path / "proj"
    files = make_project(proj, n=FILES)
    PARENT[0] = os.getpid()
    CHILD_MARK[0] = tmp_path / "child-ran"
    if how == "fails at once":
        monkeypatch.setattr(splitstore, "_child", _failing_child)
    elif how == "raises":  # what the child raises is what the parent is told
        monkeypatch.setattr(splitstore, "_die_with_parent", _child_raises)
    else:
        monkeypatch.setattr(splitstore.PackWriter, "seal",
                            _child_killed_after_sealing(splitstore.PackWriter.seal))
    result = take(store, proj, "first")
    assert result.taken
    # the scenario happened: a child was forked, and it failed where the case says
    assert CHILD_MARK[0].exists(), "no child was forked: the parent stored everything alone"
    assert int(CHILD_MARK[0].read_text()) != os.getpid()
    assert helpers[0].gave_up == why
    assert len(packs(store_dir)) == 2  # the child's pack never became visible
    fsck()
    check_exact(store_dir, result, files, proj, tmp_path)


PARENT_DIES = r"""
import os, signal, sys, time
from pathlib import Path
from rewindfs.store import Layout, Store, take
from rewindfs.store.capture import splitstore
splitstore.MIN_FILES = 100
splitstore._cores = lambda: 2
if os.environ.get("SPLIT_TEST_NO_DEATHSIG"):  # to see this test fail without it
    splitstore._die_with_parent = lambda parent: None
real_read = splitstore.fileread.read_path
def slow_read(*args):  # the child would otherwise finish its share within the deadline
    time.sleep(0.01)
    return real_read(*args)
splitstore.fileread.read_path = slow_read
real_start = splitstore.Helper.start.__func__

def start(cls, *args, **kwargs):
    helper = real_start(cls, *args, **kwargs)
    print(helper.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the parent dies; the child is storing

splitstore.Helper.start = classmethod(start)
take(Store(Layout(Path(sys.argv[1]))), sys.argv[2], "dies")
"""


def test_the_child_dies_with_its_parent(home, tmp_path, store_dir):
    proj = tmp_path / "proj"
    make_project(proj, n=4000)
    # Not subprocess.run: it would wait for the child too (it holds the stdout pipe).
    proc = subprocess.Popen([sys.executable, "-c", PARENT_DIES, str(home / "checkpoints"),
                             str(proj)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    with proc.stdout:
        child = int(proc.stdout.readline())
        assert proc.wait(timeout=120) == -9
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the child {child} still runs 10 s after its parent was killed")
