"""Places a checkpoint never captures: a rewindfs mount inside the project is not
walked, and checkpoints of a mounted checkpoint, of the Hermes home or of the store
itself are refused with one line (the API returns False / success False)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import force_unmount

from rewindfs.agent.manager import CheckpointManager


@pytest.fixture
def other_project(tmp_path, run_rewind):
    """A project with a checkpoint, so the store exists and a mount shows something."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("x\n")
    run_rewind("checkpoint", other, check=True)
    return other


def test_checkpoint_of_hermes_home_or_store_refused(home, store_dir, other_project,
                                                    run_rewind):
    for place, why in ((home, "Hermes home"), (home / "checkpoints", "checkpoint store"),
                       (store_dir, "checkpoint store"),
                       (store_dir / "objects", "checkpoint store")):
        proc = run_rewind("checkpoint", place)
        assert proc.returncode == 1, (place, proc.stderr)
        assert proc.stderr.startswith("rewind: refusing to checkpoint") and why in proc.stderr
        assert proc.stderr.count("\n") == 1
    mgr = CheckpointManager(enabled=True, base=home / "checkpoints")
    assert mgr.ensure_checkpoint(str(store_dir), "inside the store") is False
    assert mgr.checkpoint(str(home), "the home")["success"] is False


def test_store_inside_the_project_is_not_walked(tmp_path, run_rewind, files_of):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("a\n")
    proc = run_rewind("checkpoint", proj, "--json", env={"HERMES_HOME": str(proj / ".hh")})
    assert proc.returncode == 0, proc.stderr
    (proj / "b.txt").write_text("b\n")  # the store exists inside the project by now
    proc = run_rewind("checkpoint", proj, "--json", env={"HERMES_HOME": str(proj / ".hh")})
    assert proc.returncode == 0, proc.stderr
    import pygit2

    repo = pygit2.Repository(str(proj / ".hh" / "checkpoints" / "store"))
    tree = repo[json.loads(proc.stdout)["hash"]].peel(pygit2.Commit).tree
    assert sorted(e.name for e in tree) == ["a.txt", "b.txt"]


def test_mount_inside_a_project_is_never_captured(fuse_usable, tmp_path,
                                                  other_project, run_rewind, files_of):
    proj = tmp_path / "proj"
    mnt = proj / "mnt"
    mnt.mkdir(parents=True)
    run_rewind("mount", mnt, check=True)
    try:
        assert os.path.ismount(mnt)
        (proj / "a.txt").write_text("a\n")
        proc = run_rewind("checkpoint", proj, "--json")
        assert proc.returncode == 0, proc.stderr
        assert set(files_of(json.loads(proc.stdout)["hash"])) == {b"a.txt"}
        # a checkpoint directory in the mount is not a project
        inside = next(p for p in (mnt / "other").iterdir() if p.is_dir() and not p.is_symlink())
        proc = run_rewind("checkpoint", inside)
        assert proc.returncode == 1, proc.stderr
        assert "inside the rewindfs mount" in proc.stderr
        proc = run_rewind("checkpoint", cwd=inside)
        assert proc.returncode == 1 and "rewind: " in proc.stderr, proc.stderr
    finally:
        run_rewind("umount", mnt)
        force_unmount(mnt)
