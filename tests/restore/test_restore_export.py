"""`rewind restore N [PATH] --to DIR`: a checkpoint written into a new directory."""

from __future__ import annotations

import shutil

import pytest
from test_restore_helpers import checkpoint, git_view, one_line_error, picture, write


@pytest.fixture
def saved(mgr, project):
    write(project, {"run.sh": "#!/bin/sh\n", "node_modules/x.js": "ignored\n"})
    (project / "run.sh").chmod(0o755)
    (project / "link").symlink_to("README.md")
    cp = checkpoint(mgr, project, "worth keeping")
    (project / "README.md").write_text("edited afterwards\n")
    return cp


def test_export_whole_checkpoint(saved, project, run_rewind, tmp_path, files_of):
    dest = tmp_path / "exported"
    before = picture(project)
    proc = run_rewind("restore", saved[:8], "--to", dest, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert git_view(dest) == files_of(saved)
    assert picture(project) == before  # the project itself is left alone


def test_export_sub_path(saved, project, run_rewind, tmp_path, files_of):
    dest = tmp_path / "only-src"
    proc = run_rewind("restore", saved[:8], "src", "--to", dest, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert git_view(dest) == {k: v for k, v in files_of(saved).items()
                              if k.startswith(b"src/")}
    dest = tmp_path / "one-file"
    proc = run_rewind("restore", saved[:8], "README.md", "--to", dest, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert git_view(dest) == {b"README.md": files_of(saved)[b"README.md"]}


def test_export_into_existing_empty_dir(saved, project, run_rewind, tmp_path, files_of):
    dest = tmp_path / "empty-dest"
    dest.mkdir()
    proc = run_rewind("restore", saved[:8], "--to", dest, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert git_view(dest) == files_of(saved)


def test_export_after_project_deleted(saved, project, run_rewind, tmp_path, files_of):
    shutil.rmtree(project)
    dest = tmp_path / "rescued"
    proc = run_rewind("restore", "1", "--to", dest, "-C", project, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert git_view(dest) == files_of(saved)
    # a sub path named by its absolute old location
    dest2 = tmp_path / "rescued-src"
    proc = run_rewind("restore", saved[:8], str(project / "src"), "--to", dest2,
                      "-C", project, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert set(git_view(dest2)) == {b"src/pkg/__init__.py", b"src/pkg/core.py"}
    assert not project.exists()


def test_export_sub_path_after_project_deleted_relative_to_dir(saved, project, run_rewind,
                                                              tmp_path):
    """With -C naming the (deleted) project and a cwd outside it, a relative PATH can only
    mean a path inside that project, as with `git -C`."""
    shutil.rmtree(project)
    dest = tmp_path / "rescued-src"
    proc = run_rewind("restore", saved[:8], "src", "--to", dest, "-C", project, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert set(git_view(dest)) == {b"src/pkg/__init__.py", b"src/pkg/core.py"}


def test_export_refuses_non_empty_dir(saved, project, run_rewind, tmp_path):
    dest = tmp_path / "occupied"
    write(dest, {"README.md": "someone else's\n"})
    before = picture(dest)
    proc = run_rewind("restore", saved[:8], "--to", dest, cwd=project)
    assert proc.returncode == 1
    assert "not an empty directory" in one_line_error(proc)
    assert picture(dest) == before
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    proc = run_rewind("restore", saved[:8], "--to", a_file, cwd=project)
    assert proc.returncode == 1
    one_line_error(proc)
    assert a_file.read_text() == "x"


def test_export_path_not_in_checkpoint(saved, project, run_rewind, tmp_path):
    dest = tmp_path / "nothing"
    proc = run_rewind("restore", saved[:8], "no/such", "--to", dest, cwd=project)
    assert proc.returncode == 1
    assert "no/such" in one_line_error(proc)
    proc = run_rewind("restore", saved[:8], "../escape", "--to", dest, cwd=project)
    assert proc.returncode == 1
    assert "escapes" in one_line_error(proc)
    assert not dest.exists() or not any(dest.iterdir())


@pytest.mark.parametrize("existing", [False, True])
def test_export_dry_run_writes_nothing(existing, saved, project, run_rewind, tmp_path,
                                       store_dir):
    dest = tmp_path / "out" / "exported"
    if existing:
        dest.mkdir(parents=True)  # an empty directory stays empty
    around = picture(tmp_path)
    proc = run_rewind("restore", saved[:8], "--to", dest, "--dry-run", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "nothing was written" in proc.stdout
    assert "create" in proc.stdout and "README.md" in proc.stdout, proc.stdout
    assert picture(tmp_path) == around
    assert dest.exists() == existing
    proc = run_rewind("restore", saved[:8], "--to", dest, "--dry-run", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert picture(tmp_path) == around
