"""A restore that fails midway (disk full, an immutable directory, an unreadable object)
reports what was and was not restored, exits 1, and `rewind undo` brings everything back."""

from __future__ import annotations

import json
import os

import pygit2
import pytest
from conftest import small_tmpfs
from test_restore_helpers import checkpoint, immutable, manager, picture, write  # noqa: F401 - a fixture


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs (root only), unmounted afterwards."""
    with small_tmpfs(tmp_path / "small-fs", "1m") as mnt:
        yield mnt


def no_temp_files(root) -> bool:
    return not [p for p in picture(root) if b".rewind-" in p]


def disk_full_setup(mgr, small_fs):
    project = small_fs / "proj"
    write(project, {"a.txt": "a v1\n", "big.bin": os.urandom(600_000), "z.txt": "z v1\n",
                    "sub/y.txt": "y v1\n"})
    cp = checkpoint(mgr, project, "with the big file")
    (project / "a.txt").write_text("a v2\n")
    (project / "z.txt").write_text("z v2\n")
    (project / "big.bin").unlink()
    (project / "new.txt").write_text("created after\n")
    (project / "filler.log").write_bytes(b"\0" * 700_000)  # ignored: never deleted
    return project, cp


def test_disk_full_cli_reports_and_undo_recovers(mgr, small_fs, run_rewind):
    project, cp = disk_full_setup(mgr, small_fs)
    before = picture(project)
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 1, proc.stdout
    lines = proc.stdout.splitlines()
    # the first line says it failed and that the tree is partly restored, never "restored"
    assert lines[0].startswith(f"restore failed midway: {project} is partly restored to "
                               f"{cp[:8]}"), proc.stdout
    assert "2 file(s) not restored" in lines[0]
    failed = lines.index("  FAILED big.bin: No space left on device")
    assert lines[failed + 1] == "  not attempted: z.txt", proc.stdout
    assert "rewind undo" in lines[-1]  # the undo hint comes last
    # what was done is done atomically, what was not is untouched
    assert (project / "a.txt").read_text() == "a v1\n"
    assert not (project / "new.txt").exists()
    assert (project / "z.txt").read_text() == "z v2\n"
    assert not (project / "big.bin").exists()
    assert (project / "filler.log").stat().st_size == 700_000
    assert no_temp_files(project)

    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert picture(project) == before


def test_disk_full_json_says_it_failed(mgr, small_fs, run_rewind):
    project, cp = disk_full_setup(mgr, small_fs)
    proc = run_rewind("restore", cp[:8], "--yes", "--json", cwd=project)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)  # nothing but the JSON document on stdout
    assert data["success"] is False
    assert data["error"].startswith(f"restore failed midway: {project} is partly restored "
                                    f"to {cp[:8]}; 2 file(s) not restored"), data["error"]
    assert data["pre_rollback"][:8] in data["error"] and "rewind undo" in data["error"]
    assert [f["path"] for f in data["failed"]] == ["big.bin"]
    assert data["not_attempted"] == ["z.txt"]


def test_disk_full_api_reports_every_file_not_restored(mgr, small_fs):
    project, cp = disk_full_setup(mgr, small_fs)
    before = picture(project)
    out = mgr.restore(str(project), cp)
    assert out["success"] is False
    assert [f["path"] for f in out["failed"]] == ["big.bin"]
    assert out["restored_files"] == ["a.txt", "new.txt"]  # written or removed
    assert out["deleted_files"] == ["new.txt"]
    assert "not restored" in out["error"] and out["pre_rollback"][:8] in out["error"]
    # restoring the pre-rollback id brings back the exact state before the restore
    back = mgr.restore(str(project), out["pre_rollback"])
    assert back["success"], back
    assert picture(project) == before
    # a harness must learn which files were skipped, not only how many
    assert "not_attempted" in out, f"files not attempted are not reported: {out}"
    assert out["not_attempted"] == ["z.txt"]


def test_immutable_directory_midway(mgr, project, immutable, run_rewind):  # noqa: F811
    write(project, {"locked/f.txt": "f v1\n", "a.txt": "a v1\n", "z.txt": "z v1\n"})
    cp = checkpoint(mgr, project, "before")
    write(project, {"locked/f.txt": "f v2\n", "locked/new.txt": "new\n", "a.txt": "a v2\n",
                    "z.txt": "z v2\n", "made_later.txt": "later\n"})
    immutable(project / "locked")
    before = picture(project)
    proc = run_rewind("restore", cp[:8], "--yes", "--json", cwd=project)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["success"] is False
    assert sorted(f["path"] for f in data["failed"]) == ["locked/f.txt", "locked/new.txt"]
    assert data["restored_files"] == ["a.txt", "made_later.txt", "z.txt"]
    assert data["deleted_files"] == ["made_later.txt"]
    assert (project / "a.txt").read_text() == "a v1\n"
    assert (project / "locked/f.txt").read_text() == "f v2\n"
    assert no_temp_files(project)

    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert picture(project) == before


def test_unreadable_object_midway(mgr, project, run_rewind, store_dir):
    write(project, {"a.txt": "a original 1\n", "b.txt": "b original 2\n",
                    "c.txt": "c original 3\n"})
    cp = checkpoint(mgr, project, "originals")
    write(project, {"a.txt": "a changed\n", "b.txt": "b changed\n", "c.txt": "c changed\n",
                    "d.txt": "created later\n"})
    checkpoint(mgr, project, "changed")
    blob = str(pygit2.hash(b"b original 2\n"))
    path = store_dir / "objects" / blob[:2] / blob[2:]
    path.chmod(0o644)
    path.write_bytes(b"not a zlib stream")
    before = picture(project)
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode != 0
    after = picture(project)
    if after != before:  # partly applied: it must say so and be undoable
        assert "FAILED b.txt" in proc.stdout, proc.stdout + proc.stderr
        proc = run_rewind("undo", cwd=project)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert picture(project) == before
