"""store.stamp: "nothing changed since the newest checkpoint" from metadata alone, on real
checkpoints in a real store; every kind of change must defeat it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from rewindfs import CheckpointManager
from rewindfs.store import project_hash
from rewindfs.store.history import stamp

KEY = "settings-1"


@pytest.fixture
def taken(home: Path, project: Path):
    """A project with one checkpoint and its stamp; returns a checker."""
    (project / "node_modules" / "dep").mkdir(parents=True)
    (project / "node_modules" / "dep" / "index.js").write_text("x\n")
    (project / "empty").mkdir()
    os.symlink("README.md", project / "link")
    manager = CheckpointManager(enabled=True)
    result = manager.take(str(project), "first")
    store = manager.store.layout.store
    h16 = project_hash(project)
    # Captured "from one second in the future": nothing in the tree counts as racy.
    assert stamp.record(store, h16, project, result.commit, result.tree,
                        time.time_ns() + 10**9, KEY)

    def check(key: str = KEY):
        return stamp.unchanged(store, h16, project, key)

    check.result, check.manager, check.store, check.h16 = result, manager, store, h16
    return check


def test_untouched_tree_is_unchanged(taken, project: Path) -> None:
    assert taken() == (taken.result.commit, taken.result.tree)
    os.utime(project / "README.md")   # atime/mtime to now: a change as git sees it
    assert taken() is None


@pytest.mark.parametrize("change", [
    lambda p: (p / "README.md").write_text("# sample\n\nA sample project!\n"),  # same size
    lambda p: os.chmod(p / "src" / "pkg" / "core.py", 0o755),
    lambda p: (p / "src" / "pkg" / "new.py").write_text(""),
    lambda p: (p / "empty" / "sub").mkdir(),
    lambda p: (p / "empty" / "later.txt").write_text("x"),
    lambda p: os.unlink(p / "docs" / "guide.txt"),
    lambda p: os.rename(p / "docs" / "guide.txt", p / "docs" / "guide2.txt"),
    lambda p: (os.unlink(p / "link"), os.symlink("docs", p / "link")),
    lambda p: (p / "node_modules" / "dep" / "extra.js").write_text("y"),  # ignored: doubt
    lambda p: (p / "node_modules" / "dep" / "index.js").write_text("z\n"),
    lambda p: os.rmdir(p / "empty"),
], ids=["edit-same-size", "chmod", "new-file", "new-dir", "file-in-empty-dir", "delete",
        "rename", "symlink-target", "new-ignored", "edit-ignored", "rmdir"])
def test_every_change_defeats_it(change, taken, project: Path) -> None:
    assert taken() is not None
    change(project)
    assert taken() is None


def test_other_settings_or_a_moved_ref_defeat_it(taken, project: Path) -> None:
    assert taken("settings-2") is None
    assert taken() is not None
    # A checkpoint taken since (by anyone, Hermes included) moves the ref.
    (project / "README.md").write_text("changed\n")
    taken.manager.take(str(project), "second")
    (project / "README.md").write_text("# sample\n\nA sample project.\n")
    assert taken() is None


def test_tip_read_from_packed_refs(taken) -> None:
    subprocess.run(["git", "--git-dir", str(taken.store), "pack-refs", "--all"], check=True,
                   env={"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
                        "PATH": os.environ["PATH"]})
    assert not (taken.store / "refs" / "hermes" / taken.h16).exists()
    assert stamp.tip(taken.store, taken.h16) == taken.result.commit
    assert taken() is not None


def test_racy_files_leave_no_stamp(taken, project: Path) -> None:
    (project / "README.md").write_text("racy\n")
    ctime = (project / "README.md").stat().st_ctime_ns
    # The capture started just before this write: the write may have followed the read.
    assert not stamp.record(taken.store, taken.h16, project, taken.result.commit,
                            taken.result.tree, ctime, KEY)
    assert not stamp.path_of(taken.store, taken.h16).exists()
    assert taken() is None


def test_damaged_or_missing_stamp_is_no_answer(taken) -> None:
    stamp.path_of(taken.store, taken.h16).write_text("{not json")
    assert taken() is None
    stamp.forget(taken.store, taken.h16)
    assert taken() is None


@pytest.mark.parametrize("change,paths", [
    (lambda p: (p / "README.md").write_text("# other\n"), [b"README.md"]),
    (lambda p: (p / "src" / "pkg" / "new.py").write_text(""), [b"src/pkg/new.py"]),
    (lambda p: (p / "empty" / "sub").mkdir(), [b"empty/sub"]),
    (lambda p: os.unlink(p / "docs" / "guide.txt"), [b"docs/guide.txt"]),
    (lambda p: os.rename(p / "docs" / "guide.txt", p / "docs" / "g2.txt"),
     [b"docs/g2.txt", b"docs/guide.txt"]),
    (lambda p: os.rmdir(p / "empty"), [b"empty"]),
], ids=["edit", "new-file", "new-dir", "delete", "rename", "rmdir"])
def test_changes_names_what_changed(change, paths, taken, project: Path) -> None:
    change(project)
    found = stamp.changes(taken.store, taken.h16, project, KEY)
    assert found == (taken.result.commit, taken.result.tree, paths)


def test_changes_gives_up_past_most(taken, project: Path) -> None:
    for n in range(5):
        (project / f"new{n}.txt").write_text("x")
    assert stamp.changes(taken.store, taken.h16, project, KEY, most=4) is None
    assert len(stamp.changes(taken.store, taken.h16, project, KEY, most=5)[2]) == 5
