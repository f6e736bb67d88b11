"""Restore edge cases that could lose a person's file: a file that appears between
planning and applying a restore, a restore with no checkpoint to undo it to, and an
error midway recorded as what it was.

The restore is paused between its plan and its first change by `apply.pausing`
(the journal intent is written by then), so each race happens exactly, every run.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from test_restore_helpers import checkpoint, manager, picture, write

from rewindfs import restore as rs
from rewindfs.cli.commands.restore import describe
from rewindfs.restore import journal, noreplace
from rewindfs.restore.apply import pausing
from rewindfs.restore.plan import CREATE
from rewindfs.store.history import load


@pytest.fixture
def mgr(home):
    return manager(home)


def test_a_file_saved_meanwhile_is_kept_and_reported(mgr, project):
    (project / "notes.txt").write_text("the agent's notes\n")
    target = checkpoint(mgr, project, "with notes")
    (project / "notes.txt").unlink()
    write(project, {"README.md": "edited\n"})
    seen = []

    def person_saves(plan, root):
        seen.append([a.path for a in plan.actions if a.kind == CREATE])
        (project / "notes.txt").write_text("the person's notes, saved just now\n")

    with pausing(person_saves):
        result = rs.restore(mgr.store, project, target)
    assert seen == [[b"notes.txt"]]  # the plan was to create it, and it appeared before
    assert (project / "notes.txt").read_text() == "the person's notes, saved just now\n"
    assert result.outcome.appeared == [b"notes.txt"]
    assert b"notes.txt" not in result.outcome.touched
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"
    assert not [p for p in picture(project) if b".rewind-" in p]  # its temp file is gone
    assert any("kept (appeared during the restore" in line and "notes.txt" in line
               for line in describe(result))
    # undo puts back what the restore changed, and leaves the person's file alone
    rs.undo(mgr.store, project)
    assert (project / "README.md").read_text() == "edited\n"
    assert (project / "notes.txt").read_text() == "the person's notes, saved just now\n"


def test_the_api_reports_a_file_kept(mgr, project):
    (project / "made.txt").write_text("v1\n")
    target = checkpoint(mgr, project, "with made.txt")
    (project / "made.txt").unlink()
    checkpoint(mgr, project, "without")

    def build_writes_it(plan, root):
        (project / "made.txt").write_text("written by a build\n")

    with pausing(build_writes_it):
        out = mgr.restore(str(project), target)
    assert out["success"] is True
    assert out["kept_appeared"] == ["made.txt"]
    assert "made.txt" not in out["restored_files"]
    assert (project / "made.txt").read_text() == "written by a build\n"


def test_a_restore_with_no_checkpoint_to_undo_to_makes_one(mgr, project, tmp_path):
    """A project without a checkpoint (an empty directory) restored to a checkpoint
    loaded from elsewhere (the API takes one): an empty pre-rollback snapshot is
    recorded first, so the restore is journalled and undone like any other."""
    target = checkpoint(mgr, project, "elsewhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = rs.restore(mgr.store, empty, load(mgr.store.repo, target))
    assert result.pre_rollback is not None and (empty / "README.md").exists()
    entry = journal.last(journal.path_for(mgr.store.layout, _h16(empty)))
    assert entry is not None and entry.pre_rollback == result.pre_rollback
    rs.undo(mgr.store, empty)
    assert picture(empty) == {}


def test_an_error_midway_is_recorded_as_failed(mgr, project, tmp_path):
    """Not "interrupted" (that is Ctrl-C): the project directory vanished between the
    plan and the first write, and the journal says the restore failed, touching
    nothing."""
    target = checkpoint(mgr, project, "target")
    write(project, {"README.md": "changed\n"})
    away = tmp_path / "moved-away"

    def directory_vanishes(plan, root):
        os.rename(project, away)

    with pausing(directory_vanishes), pytest.raises(FileNotFoundError):
        rs.restore(mgr.store, project, target)
    entry = journal.last(journal.path_for(mgr.store.layout, _h16(project)))
    assert entry.status == journal.FAILED and entry.touched == []


def _h16(path: Path) -> str:
    from rewindfs.store import project_hash

    return project_hash(path)


# -- the no-replace placement, on this filesystem and its fallbacks ---------------------


@pytest.fixture
def dir_fd(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


@pytest.mark.parametrize("place", [noreplace.rename, noreplace.link, noreplace.copy],
                         ids=["renameat2", "hard-link", "exclusive-copy"])
def test_placing_never_replaces(place, tmp_path, dir_fd):
    (tmp_path / "tmp").write_text("restored\n")
    os.chmod(tmp_path / "tmp", 0o640)
    (tmp_path / "taken").write_text("the person's\n")
    with pytest.raises(FileExistsError):
        place(dir_fd, b"tmp", b"taken")
    assert (tmp_path / "taken").read_text() == "the person's\n"
    assert (tmp_path / "tmp").read_text() == "restored\n"  # left for the caller to drop
    place(dir_fd, b"tmp", b"free")
    assert (tmp_path / "free").read_text() == "restored\n" and not (tmp_path / "tmp").exists()
    assert stat.S_IMODE((tmp_path / "free").stat().st_mode) == 0o640


@pytest.mark.parametrize("place", [noreplace.rename, noreplace.link, noreplace.copy],
                         ids=["renameat2", "hard-link", "exclusive-copy"])
def test_placing_a_symlink_never_replaces(place, tmp_path, dir_fd):
    os.symlink("target", tmp_path / "tmp")
    os.symlink("someone else's", tmp_path / "taken")
    with pytest.raises(FileExistsError):
        place(dir_fd, b"tmp", b"taken")
    assert os.readlink(tmp_path / "taken") == "someone else's"
    place(dir_fd, b"tmp", b"free")
    assert os.readlink(tmp_path / "free") == "target" and not os.path.lexists(tmp_path / "tmp")
