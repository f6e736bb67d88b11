"""Whole-tree restores: exactly the checkpoint's files afterwards, ignored files never touched,
created files and the directories they leave empty removed; dry run changes nothing."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from test_restore_helpers import (
    EXECUTABLE,
    LINK,
    chain,
    checkpoint,
    git_view,
    manager,
    one_line_error,
    picture,
    ref_tip,
    without_empty_dirs,
    write,
)

from rewindfs import restore as rs

CAP_MB = "0.01"  # 10,485 bytes: huge.bin is over it
IGNORED_TOP = {b"node_modules", b"output", b".env", b"huge.bin"}


def is_ignored(rel: bytes) -> bool:
    return rel.split(b"/")[0] in IGNORED_TOP or rel.endswith(b".log")


@pytest.fixture
def mgr(home):
    return manager(home, max_file_size_mb=float(CAP_MB))


@pytest.fixture
def scenario(mgr, project):
    """A checkpoint with ignored files of every kind around it, then a messy afternoon.

    Returns (checkpoint id, ignored files' picture just before the restore)."""
    write(project, {
        "run.sh": "#!/bin/sh\necho hi\n",
        ".gitignore": "output/\n",
        "node_modules/lib/index.js": "module.exports = 1\n",
        ".env": "TOKEN=secret\n",
        "app.log": "started\n",
        "output/bundle.js": "bundle v1\n",
        "huge.bin": b"\0" * 20_000,
        "gen/keep.txt": "generated but tracked\n",
    })
    (project / "run.sh").chmod(0o755)
    (project / "link_to_readme").symlink_to("README.md")
    (project / "empty").mkdir()
    cp = checkpoint(mgr, project, "before the afternoon")

    # tracked files: changed, deleted, mode flipped, type changed, link retargeted
    (project / "src/pkg/core.py").write_text("def add(a, b):\n    return a - b  # oops\n")
    (project / "docs/guide.txt").unlink()
    (project / "run.sh").write_text("#!/bin/sh\nrm -rf /\n")
    (project / "run.sh").chmod(0o644)
    (project / "README.md").unlink()
    write(project, {"README.md/note.txt": "a directory now\n"})
    (project / "link_to_readme").unlink()
    (project / "link_to_readme").symlink_to("docs")
    # created after the checkpoint
    write(project, {
        "src/pkg/extra.py": "x = 1\n",
        "newdir/deep/deeper/x.txt": "new\n",
        "gen/trace.log": "ignored, keeps gen/ alive\n",
    })
    (project / "src/pkg/cache").mkdir()  # an empty dir nobody captured
    # ignored files: changed and created
    write(project, {
        "node_modules/lib/index.js": "module.exports = 2\n",
        "node_modules/new/pkg.js": "new dep\n",
        ".env": "TOKEN=rotated\n",
        "app.log": "started\nmore\n",
        "debug.log": "new log\n",
        "output/bundle.js": "bundle v2\n",
        "output/chunk.js": "chunk\n",
        "huge.bin": b"\1" * 30_000,
    })
    ignored_before = {k: v for k, v in picture(project).items() if is_ignored(k)}
    return cp, ignored_before


def check_restored(project, files_of, cp, ignored_before):
    assert git_view(project, is_ignored) == files_of(cp)
    after = picture(project)
    assert {k: v for k, v in after.items() if is_ignored(k)} == ignored_before
    assert after[b"empty"][0] == "dir", "a pre-existing empty directory was removed"
    assert after[b"src/pkg/cache"][0] == "dir", "an uncaptured empty directory was removed"
    assert b"newdir" not in after, "directories left empty by the restore must go"
    assert after[b"gen"][0] == "dir" and b"gen/trace.log" in after
    assert after[b"run.sh"][1] == 0o755
    assert after[b"link_to_readme"] == ("link", b"README.md")
    assert after[b"README.md"][0] == "file"


def test_full_restore_cli(scenario, project, run_rewind, files_of, store_dir):
    cp, ignored_before = scenario
    proc = run_rewind("restore", cp[:10], "--yes", cwd=project,
                      env={"REWIND_MAX_FILE_SIZE_MB": CAP_MB})
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    check_restored(project, files_of, cp, ignored_before)
    assert chain(store_dir, project)[0][1] == f"pre-rollback snapshot (restoring to {cp[:8]})"


def test_full_restore_api(scenario, project, mgr, files_of):
    cp, ignored_before = scenario
    out = mgr.restore(str(project), cp)
    assert out["success"], out
    check_restored(project, files_of, cp, ignored_before)
    assert out["safe"] is False  # no agent-write ledger: plain full restore
    assert sorted(out["deleted_files"]) == [
        "README.md/note.txt", "newdir/deep/deeper/x.txt", "src/pkg/extra.py"]
    assert out["restored_files"] == sorted([  # everything written or removed
        "README.md", "docs/guide.txt", "link_to_readme", "run.sh", "src/pkg/core.py",
        "README.md/note.txt", "newdir/deep/deeper/x.txt", "src/pkg/extra.py"])
    assert out["failed"] == []
    # ignored and oversize paths are not even mentioned as touched
    for key in ("restored_files", "deleted_files"):
        assert not [p for p in out[key] if is_ignored(os.fsencode(p))]


def test_file_grown_over_cap_is_reverted_and_undoable(mgr, project, files_of, store_dir):
    """The checkpoint holds the small version, so the restore puts it back; the bloated
    one is over the cap, yet the pre-rollback snapshot holds it and undo returns it."""
    write(project, {"data.csv": "a,b\n1,2\n"})
    cp = checkpoint(mgr, project, "small data")
    big = b"x,y\n" * 5_000  # over the cap now
    (project / "data.csv").write_bytes(big)
    (project / "README.md").write_text("changed\n")
    out = mgr.restore(str(project), cp)
    assert out["success"], out
    assert (project / "data.csv").read_text() == "a,b\n1,2\n"
    assert "data.csv" in out["restored_files"] and out["untouched"] == []
    assert (project / "README.md").read_bytes() == files_of(cp)[b"README.md"][1]
    assert files_of(out["pre_rollback"])[b"data.csv"][1] == big
    back = rs.undo(mgr.store, project, rs.Options(limits=mgr.limits))
    assert back.success
    assert (project / "data.csv").read_bytes() == big
    # and checkpoints keep to the cap again
    (project / "README.md").write_text("changed again\n")
    later = mgr.take(str(project), "after")
    assert later.taken and b"data.csv" not in files_of(later.commit)


def test_dir_holding_only_ignored_files_where_a_file_belongs(mgr, project):
    cp = checkpoint(mgr, project, "readme is a file")
    (project / "README.md").unlink()
    write(project, {"README.md/keep.log": "ignored\n"})
    out = mgr.restore(str(project), cp)
    # the file cannot go back without deleting an ignored file: the plan keeps the
    # directory and says so, and the restore does what it planned (issue 41)
    assert (project / "README.md/keep.log").read_text() == "ignored\n"
    assert out["success"], out
    assert out["failed"] == [] and out["untouched"] == ["README.md"], out


# -- dry run --------------------------------------------------------------------------


def test_dry_run_prints_plan_and_changes_nothing(scenario, project, run_rewind, store_dir):
    cp, _ = scenario
    before, tip = picture(project), ref_tip(store_dir, project)
    env = {"REWIND_MAX_FILE_SIZE_MB": CAP_MB}
    proc = run_rewind("restore", cp[:8], "--dry-run", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "nothing was changed" in out
    assert "overwrite 3: link_to_readme, run.sh, src/pkg/core.py" in out, out
    assert "create 2: README.md, docs/guide.txt" in out, out
    assert "delete 3: README.md/note.txt, newdir/deep/deeper/x.txt, src/pkg/extra.py" in out
    assert picture(project) == before
    assert ref_tip(store_dir, project) == tip

    proc = run_rewind("restore", cp[:8], "--dry-run", "--json", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)["plan"]
    assert plan == {"overwrite": 3, "create": 2, "delete": 3, "chmod": 0,
                    "kept_user_edits": 0, "kept_not_agent": 0, "untouched": 0}
    assert picture(project) == before
    assert ref_tip(store_dir, project) == tip


def test_dry_run_of_paths_changes_nothing(scenario, project, run_rewind, store_dir):
    cp, _ = scenario
    before, tip = picture(project), ref_tip(store_dir, project)
    proc = run_rewind("restore", cp[:8], "src", "newdir", "--dry-run", cwd=project,
                      env={"REWIND_MAX_FILE_SIZE_MB": CAP_MB})
    assert proc.returncode == 0, proc.stderr
    assert "overwrite 1: src/pkg/core.py" in proc.stdout
    assert "delete 2: newdir/deep/deeper/x.txt, src/pkg/extra.py" in proc.stdout
    assert "run.sh" not in proc.stdout
    assert picture(project) == before
    assert ref_tip(store_dir, project) == tip


# -- paths ----------------------------------------------------------------------------


@pytest.fixture
def edited(mgr, project):
    """A checkpoint, then edits everywhere; returns (checkpoint id, its files)."""
    cp = checkpoint(mgr, project, "clean")
    (project / "README.md").write_text("readme edited\n")
    (project / "src/pkg/core.py").write_text("core edited\n")
    (project / "src/pkg/__init__.py").unlink()
    write(project, {"src/pkg/new_mod.py": "new\n", "src/new_dir/a.py": "a\n",
                    "docs/guide.txt": "guide edited\n", "notes.txt": "new top-level\n"})
    return cp


def test_restore_one_file(edited, project, run_rewind, files_of):
    proc = run_rewind("restore", edited[:8], "src/pkg/core.py", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "src/pkg/core.py").read_bytes() == files_of(edited)[b"src/pkg/core.py"][1]
    assert (project / "README.md").read_text() == "readme edited\n"
    assert (project / "src/pkg/new_mod.py").exists()
    assert not (project / "src/pkg/__init__.py").exists()


def test_restore_directory_removes_files_created_inside(edited, project, run_rewind, files_of):
    proc = run_rewind("restore", edited[:8], "src", "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    view = git_view(project)
    want = files_of(edited)
    assert {k: v for k, v in view.items() if k.startswith(b"src/")} == \
        {k: v for k, v in want.items() if k.startswith(b"src/")}
    assert not (project / "src/new_dir").exists()
    # outside the directory nothing changed
    assert (project / "README.md").read_text() == "readme edited\n"
    assert (project / "notes.txt").exists()
    assert (project / "docs/guide.txt").read_text() == "guide edited\n"


def test_restore_directory_without_yes_refuses_deletes(edited, project, run_rewind,
                                                       store_dir):
    before, tip = picture(project), ref_tip(store_dir, project)
    proc = run_rewind("restore", edited[:8], "src", cwd=project)
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert "--yes" in line and "src/pkg/new_mod.py" in line
    assert picture(project) == before
    assert ref_tip(store_dir, project) == tip


def test_restore_several_paths(edited, project, run_rewind, files_of):
    proc = run_rewind("restore", edited[:8], "README.md", "docs", "src/pkg/__init__.py",
                      cwd=project)
    assert proc.returncode == 0, proc.stderr
    want = files_of(edited)
    for rel in (b"README.md", b"docs/guide.txt", b"src/pkg/__init__.py"):
        assert (project / os.fsdecode(rel)).read_bytes() == want[rel][1]
    assert (project / "src/pkg/core.py").read_text() == "core edited\n"
    assert (project / "notes.txt").exists()


def test_path_relative_to_subdirectory_cwd(edited, project, run_rewind, files_of):
    proc = run_rewind("restore", edited[:8], "core.py", "__init__.py",
                      cwd=project / "src" / "pkg")
    assert proc.returncode == 0, proc.stderr
    want = files_of(edited)
    assert (project / "src/pkg/core.py").read_bytes() == want[b"src/pkg/core.py"][1]
    assert (project / "src/pkg/__init__.py").exists()
    assert (project / "README.md").read_text() == "readme edited\n"
    # `..` that stays inside the project is fine too
    proc = run_rewind("restore", edited[:8], "../../README.md", cwd=project / "src" / "pkg")
    assert proc.returncode == 0, proc.stderr
    assert (project / "README.md").read_bytes() == want[b"README.md"][1]


def test_path_missing_from_checkpoint_needs_yes(edited, project, run_rewind, store_dir):
    before, tip = picture(project), ref_tip(store_dir, project)
    proc = run_rewind("restore", edited[:8], "notes.txt", cwd=project)
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert "notes.txt" in line and "--yes" in line
    assert picture(project) == before
    assert ref_tip(store_dir, project) == tip

    proc = run_rewind("restore", edited[:8], "notes.txt", "--yes", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["deleted_files"] == ["notes.txt"]
    assert not (project / "notes.txt").exists()
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "notes.txt").read_text() == "new top-level\n"


def test_path_in_neither_checkpoint_nor_tree(edited, project, run_rewind):
    before = picture(project)
    proc = run_rewind("restore", edited[:8], "no/such/file.txt", "--yes", cwd=project)
    assert proc.returncode == 1
    assert "no/such/file.txt" in one_line_error(proc)
    assert picture(project) == before


def test_api_file_missing_from_checkpoint(edited, project, mgr, store_dir):
    before = picture(project)
    out = mgr.restore(str(project), edited, file_path="notes.txt")
    assert out["success"] is False
    assert "notes.txt" in out["error"] and "\n" not in out["error"]
    out = mgr.restore(str(project), edited, file_path="nowhere.txt")
    assert out["success"] is False
    assert picture(project) == before


def test_api_file_restore(edited, project, mgr, files_of):
    out = mgr.restore(str(project), edited[:12], file_path="src/pkg/core.py")
    assert out["success"], out
    assert out["file"] == "src/pkg/core.py"
    assert out["restored_files"] == ["src/pkg/core.py"]
    assert (project / "src/pkg/core.py").read_bytes() == files_of(edited)[b"src/pkg/core.py"][1]
    # a directory through the API: files created inside are removed
    out = mgr.restore(str(project), edited, file_path="src")
    assert out["success"], out
    assert sorted(out["deleted_files"]) == ["src/new_dir/a.py", "src/pkg/new_mod.py"]
    assert not (project / "src/new_dir").exists()
    assert (project / "notes.txt").exists()


# -- pre-rollback snapshot and undo ------------------------------------------------------


def test_pre_rollback_snapshot_recorded(edited, project, mgr, store_dir, files_of):
    before = git_view(project)
    count = len(chain(store_dir, project))
    out = mgr.restore(str(project), edited)
    assert out["success"], out
    history = chain(store_dir, project)
    assert len(history) == count + 1
    assert history[0] == (out["pre_rollback"],
                          f"pre-rollback snapshot (restoring to {edited[:8]})")
    assert files_of(out["pre_rollback"]) == before


def test_nothing_changed_newest_checkpoint_is_the_pre_rollback(edited, project, mgr,
                                                                store_dir):
    newest = checkpoint(mgr, project, "after edits")
    history = chain(store_dir, project)
    out = mgr.restore(str(project), edited)
    assert out["success"], out
    assert out["pre_rollback"] == newest
    # the restore itself wrote a commit? no: the newest checkpoint serves as the record
    assert chain(store_dir, project) == history


def test_nothing_changed_path_restore(edited, project, mgr, store_dir):
    newest = checkpoint(mgr, project, "after edits")
    history = chain(store_dir, project)
    out = mgr.restore(str(project), edited, file_path="README.md")
    assert out["success"], out
    assert out["pre_rollback"] == newest
    assert chain(store_dir, project) == history


def test_undo_and_undo_of_undo(scenario, project, run_rewind, files_of):
    cp, ignored_before = scenario
    env = {"REWIND_MAX_FILE_SIZE_MB": CAP_MB}
    before = picture(project)
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    restored = picture(project)
    assert restored != before

    # (docs/ was left empty by deleting docs/guide.txt: see the empty-directory test below)
    proc = run_rewind("undo", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert without_empty_dirs(picture(project)) == without_empty_dirs(before)

    proc = run_rewind("undo", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert picture(project) == restored
    check_restored(project, files_of, cp, ignored_before)

    proc = run_rewind("undo", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert without_empty_dirs(picture(project)) == without_empty_dirs(before)


def test_undo_keeps_directory_that_was_empty_before_the_restore(mgr, project, run_rewind):
    """The restore writes docs/guide.txt into docs/, which was empty; undo must delete the
    file but leave docs/ as it found it (an app may need its empty uploads/ or logs/)."""
    cp = checkpoint(mgr, project, "with guide")
    (project / "docs/guide.txt").unlink()
    before = picture(project)
    assert before[b"docs"][0] == "dir"
    assert mgr.restore(str(project), cp)["success"]
    assert (project / "docs/guide.txt").exists()
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert picture(project) == before, "undo removed docs/, which existed before the restore"


def test_file_replaced_by_empty_directory(mgr, project, files_of):
    """README.md became an (empty) directory: a full restore must put the file back."""
    cp = checkpoint(mgr, project, "readme is a file")
    (project / "README.md").unlink()
    (project / "README.md").mkdir()
    out = mgr.restore(str(project), cp)
    assert out["success"], out
    assert (project / "README.md").is_file(), \
        f"restore reported success but README.md is still a directory: {out}"
    assert git_view(project) == files_of(cp)


def test_undo_after_single_file_restore_touches_only_that_file(edited, project, run_rewind):
    proc = run_rewind("restore", edited[:8], "src/pkg/core.py", cwd=project)
    assert proc.returncode == 0, proc.stderr
    (project / "README.md").write_text("edited after the restore\n")
    (project / "later.txt").write_text("created after the restore\n")
    expected = picture(project)
    expected[b"src/pkg/core.py"] = ("file", 0o644, b"core edited\n")
    proc = run_rewind("undo", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["restored_files"] == ["src/pkg/core.py"]
    assert picture(project) == expected


def test_undo_with_nothing_to_undo(project, mgr, run_rewind):
    checkpoint(mgr, project, "only")
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 1
    assert "nothing to undo" in one_line_error(proc)


# -- API result dict ----------------------------------------------------------------------


def test_api_dict_keys_and_turn_id(mgr, project):
    cp = checkpoint(mgr, project, "turn seven", trailers={"Rewind-Turn": "t7"})
    (project / "README.md").write_text("changed\n")
    (project / "brand_new.txt").write_text("new\n")
    out = mgr.restore(str(project), cp)
    assert out["success"] is True
    for key in ("success", "restored_to", "reason", "directory", "restored_files",
                "deleted_files", "pre_rollback"):
        assert key in out, key
    for key in ("file", "skipped_user_edits", "skipped_oversize", "failed_deletes"):
        assert key not in out, key  # no path given; a full restore has no safe-mode keys
    assert out["restored_to"] == cp[:8]
    assert out["reason"] == "turn seven"
    assert out["directory"] == str(project.resolve())
    assert out["restored_files"] == ["README.md", "brand_new.txt"]
    assert out["deleted_files"] == ["brand_new.txt"]
    assert len(out["pre_rollback"]) == 40
    assert out["turn_id"] == "t7"
    json.dumps(out)  # a harness may log or send it as is

    out = mgr.restore(str(project), cp, file_path="README.md")
    assert out["success"] is True and out["file"] == "README.md"
    assert out["turn_id"] == "t7"

    (project / "x.txt").write_text("x\n")
    plain = checkpoint(mgr, project, "no trailers")
    out = mgr.restore(str(project), plain)
    assert out["success"] and out["turn_id"] is None


def test_api_error_dict_never_raises(mgr, project, tmp_path):
    checkpoint(mgr, project, "one")
    for args in ((str(project), "nope"), (str(tmp_path / "gone"), "1"),
                 (str(project), "1", "/etc/passwd")):
        out = mgr.restore(*args)
        assert out["success"] is False and out["error"], (args, out)


def test_numbers_and_labels_resolve(mgr, project, run_rewind, files_of):
    first = checkpoint(mgr, project, "first")
    (project / "README.md").write_text("two\n")
    checkpoint(mgr, project, "second")
    (project / "README.md").write_text("three\n")
    proc = run_rewind("restore", "1", cwd=project)  # 1 = newest: "second"
    assert proc.returncode == 0, proc.stderr
    assert (project / "README.md").read_text() == "two\n"
    proc = run_rewind("restore", first, "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hash"] == first
    assert (project / "README.md").read_bytes() == files_of(first)[b"README.md"][1]


def test_exec_bits_and_links_round_trip(mgr, project, files_of):
    write(project, {"bin/tool": "#!/bin/sh\n", "bin/plain": "data\n"})
    (project / "bin/tool").chmod(0o755)
    (project / "rel_link").symlink_to("src/pkg")
    (project / "abs_link").symlink_to("/nonexistent/target/elsewhere")
    cp = checkpoint(mgr, project, "modes and links")
    assert files_of(cp)[b"bin/tool"][0] == EXECUTABLE
    assert files_of(cp)[b"abs_link"] == (LINK, b"/nonexistent/target/elsewhere")

    (project / "bin/tool").chmod(0o644)  # same bytes, mode only
    (project / "bin/plain").chmod(0o755)
    (project / "rel_link").unlink()
    (project / "rel_link").write_text("a file now\n")
    (project / "abs_link").unlink()
    shutil.rmtree(project / "src")
    out = mgr.restore(str(project), cp)
    assert out["success"], out
    assert os.stat(project / "bin/tool").st_mode & 0o777 == 0o755
    assert os.stat(project / "bin/plain").st_mode & 0o777 == 0o644
    assert os.readlink(project / "rel_link") == "src/pkg"
    assert os.readlink(project / "abs_link") == "/nonexistent/target/elsewhere"
    assert git_view(project) == files_of(cp)


def test_restore_of_many_directories_under_a_low_descriptor_limit(mgr, project, home,
                                                                  tmp_path):
    """A restore touching more directories than a process may hold open descriptors."""
    import resource
    import subprocess

    from conftest import REWIND, rewind_env

    write(project, {f"many/d{i}/f.txt": f"v1 {i}\n" for i in range(300)})
    cp = mgr.take(str(project), "300 directories").commit
    write(project, {f"many/d{i}/f.txt": f"v2 {i}\n" for i in range(300)})
    limit = (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    proc = subprocess.run([REWIND, "restore", cp[:8], "--yes"], cwd=project,
                          env=rewind_env(home, tmp_path / "user-home"), capture_output=True,
                          text=True, timeout=120, preexec_fn=lambda: resource.setrlimit(
                              resource.RLIMIT_NOFILE, limit))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all((project / f"many/d{i}/f.txt").read_text() == f"v1 {i}\n" for i in range(300))
