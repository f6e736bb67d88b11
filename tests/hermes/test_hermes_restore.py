"""Restores as current upstream Hermes does them (issue 13): safe mode brings back a file
the agent wrote and that was deleted since, a file that grew past the size cap is
reverted, and the pre-rollback snapshot holds whatever a restore overwrites."""

from __future__ import annotations

from test_restore_helpers import checkpoint, manager, write

from rewindfs import restore as rs

CAP = 10 * 1024  # bytes


def small_cap_manager(home):
    return manager(home, max_file_size_mb=CAP / (1024 * 1024))


def test_safe_restore_brings_back_an_agent_written_file_deleted_since(home, project):
    """No ledger record of the delete: the file's last known content was the agent's, so
    putting the checkpoint's version back overwrites nothing."""
    mgr = manager(home)
    write(project, {"main.py": "original\n"})
    cp = checkpoint(mgr, project, "before the turn")
    (project / "main.py").write_text("agent version\n")
    assert mgr.record_agent_write(str(project), "main.py")
    (project / "main.py").unlink()  # e.g. the agent's `rm` in a shell
    result = rs.restore(mgr.store, project, cp, rs.Options(safe=True))
    assert result.success and result.safe
    assert (project / "main.py").read_text() == "original\n"
    assert result.plan.kept_user_edits == []


def test_dry_run_of_a_grown_file_leaves_checkpoints_capped(home, project):
    """A dry run looks at the grown file without the cap but leaves the index as a
    checkpoint would: the next checkpoint still leaves the big file out."""
    mgr = small_cap_manager(home)
    write(project, {"data.bin": b"small\n"})
    cp = checkpoint(mgr, project, "small")
    big = b"b" * (CAP + 1)
    (project / "data.bin").write_bytes(big)
    plan = rs.dry_run(mgr.store, project, cp, rs.Options(limits=mgr.limits))
    assert plan.plan.of("overwrite") == [b"data.bin"]
    (project / "README.md").write_text("changed\n")
    later = mgr.take(str(project), "after the dry run")
    assert later.taken and later.skipped_files == {"oversize": ["data.bin"]}
    assert (project / "data.bin").read_bytes() == big


def test_kept_grown_file_does_not_stay_in_later_checkpoints(home, project, files_of):
    """Safe mode keeps a grown file a person wrote; the pre-rollback snapshot held it, the
    next checkpoint does not (the cap applies again)."""
    mgr = small_cap_manager(home)
    write(project, {"data.bin": b"small\n", "a.txt": "a\n"})
    cp = checkpoint(mgr, project, "small")
    (project / "a.txt").write_text("agent\n")
    assert mgr.record_agent_write(str(project), "a.txt")
    big = b"p" * (CAP + 1)
    (project / "data.bin").write_bytes(big)  # a person's
    result = rs.restore(mgr.store, project, cp, rs.Options(safe=True, limits=mgr.limits))
    assert result.success and result.plan.kept_not_agent == [b"data.bin"]
    assert (project / "data.bin").read_bytes() == big
    assert files_of(result.pre_rollback)[b"data.bin"][1] == big
    (project / "a.txt").write_text("later\n")
    later = mgr.take(str(project), "later")
    assert later.taken and b"data.bin" not in files_of(later.commit)
