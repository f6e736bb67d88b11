"""A restore never writes outside the project, and refuses clearly what it cannot do."""

from __future__ import annotations

import os
import shutil

import pygit2
import pytest
from test_restore_helpers import (
    chain,
    checkpoint,
    git_view,
    manager,
    one_line_error,
    picture,
    ref_tip,
    write,
)


@pytest.fixture
def outside(tmp_path):
    """A directory next to the project that no restore may ever change."""
    root = tmp_path / "outside"
    write(root, {"pkg/core.py": "OUTSIDE core\n", "pkg/only_outside.py": "o\n",
                 "secret.txt": "outside secret\n", "x.txt": "outside x\n"})
    return root


# -- traversal and absolute paths ----------------------------------------------------


@pytest.mark.parametrize("path", ["../outside/x.txt", "src/../../outside/x.txt", "..",
                                  "../proj/../outside"])
def test_cli_rejects_traversal(path, mgr, project, outside, run_rewind, store_dir):
    cp = checkpoint(mgr, project, "one")
    (project / "README.md").write_text("edited\n")
    before, outside_before, tip = picture(project), picture(outside), ref_tip(store_dir, project)
    proc = run_rewind("restore", cp[:8], path, "--yes", cwd=project)
    assert proc.returncode == 1
    assert "escapes the project" in one_line_error(proc)
    assert picture(project) == before
    assert picture(outside) == outside_before
    assert ref_tip(store_dir, project) == tip


@pytest.mark.parametrize("path", ["../outside/x.txt", "src/../../outside/x.txt", "..",
                                  "./../outside"])
def test_api_rejects_traversal(path, mgr, project, outside):
    cp = checkpoint(mgr, project, "one")
    (project / "README.md").write_text("edited\n")
    before, outside_before = picture(project), picture(outside)
    out = mgr.restore(str(project), cp, file_path=path)
    assert out["success"] is False
    assert "escapes the working directory" in out["error"] and "\n" not in out["error"]
    assert picture(project) == before
    assert picture(outside) == outside_before


def test_api_rejects_absolute_paths(mgr, project, outside):
    cp = checkpoint(mgr, project, "one")
    (project / "README.md").write_text("edited\n")
    before, outside_before = picture(project), picture(outside)
    for path in (str(project / "README.md"), str(outside / "x.txt"), "/etc/passwd"):
        out = mgr.restore(str(project), cp, file_path=path)
        assert out["success"] is False, path
        assert "absolute" in out["error"] and "\n" not in out["error"]
    assert picture(project) == before
    assert picture(outside) == outside_before


def test_cli_rejects_absolute_path_outside_but_accepts_inside(mgr, project, outside,
                                                              run_rewind):
    cp = checkpoint(mgr, project, "one")
    (project / "README.md").write_text("edited\n")
    proc = run_rewind("restore", cp[:8], str(outside / "x.txt"), "--yes", cwd=project)
    assert proc.returncode == 1
    assert "escapes the project" in one_line_error(proc)
    proc = run_rewind("restore", cp[:8], str(project / "README.md"), cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "README.md").read_text().startswith("# sample")


def test_git_dir_is_never_a_restore_target(mgr, project, run_rewind):
    cp = checkpoint(mgr, project, "one")
    proc = run_rewind("restore", cp[:8], ".git/config", "--yes", cwd=project)
    assert proc.returncode == 1
    assert ".git" in one_line_error(proc)


# -- symlinks in the working tree ------------------------------------------------------


def test_symlinked_parent_dir_full_restore(mgr, project, outside, run_rewind, files_of):
    """`src` replaced by a link to a directory outside: the restore replaces the link with
    the real directory and never writes through it."""
    cp = checkpoint(mgr, project, "src is a directory")
    shutil.rmtree(project / "src")
    (project / "src").symlink_to(outside)
    outside_before = picture(outside)
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert picture(outside) == outside_before
    assert not os.path.islink(project / "src") and (project / "src").is_dir()
    assert git_view(project) == files_of(cp)
    # and undo puts the link back, still without writing outside
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.readlink(project / "src") == str(outside)
    assert picture(outside) == outside_before


def test_symlinked_parent_dir_directory_restore(mgr, project, outside, run_rewind, files_of):
    cp = checkpoint(mgr, project, "src is a directory")
    shutil.rmtree(project / "src")
    (project / "src").symlink_to(outside)
    outside_before = picture(outside)
    proc = run_rewind("restore", cp[:8], "src", "--yes", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert picture(outside) == outside_before
    assert not os.path.islink(project / "src")
    assert git_view(project) == files_of(cp)


def test_symlinked_parent_dir_file_restore(mgr, project, outside, run_rewind, files_of,
                                           store_dir):
    """Restoring one file below a symlinked directory: nothing outside changes, and the
    pre-rollback snapshot records the working tree (a link), never the outside file's
    bytes as if they were project content."""
    cp = checkpoint(mgr, project, "src is a directory")
    shutil.rmtree(project / "src")
    (project / "src").symlink_to(outside)
    outside_before = picture(outside)
    proc = run_rewind("restore", cp[:8], "src/pkg/core.py", "--yes", cwd=project)
    assert "Traceback" not in proc.stderr
    assert picture(outside) == outside_before
    if proc.returncode == 0:
        assert not os.path.islink(project / "src")
        assert (project / "src/pkg/core.py").read_bytes() == \
            files_of(cp)[b"src/pkg/core.py"][1]
    else:  # refused or failed: the link is still there, untouched
        assert os.readlink(project / "src") == str(outside)
    pre = chain(store_dir, project)[0]
    assert pre[1].startswith("pre-rollback snapshot")
    recorded = files_of(pre[0])
    leaked = {k: v for k, v in recorded.items() if b"OUTSIDE" in v[1]}
    assert not leaked, f"pre-rollback snapshot captured files from outside the project: " \
                       f"{sorted(leaked)}"


def test_symlink_at_file_position_is_replaced(mgr, project, outside, run_rewind, files_of):
    cp = checkpoint(mgr, project, "readme is a file")
    (project / "README.md").unlink()
    (project / "README.md").symlink_to(outside / "secret.txt")
    (project / "src/pkg/core.py").unlink()
    (project / "src/pkg/core.py").symlink_to(outside / "pkg" / "core.py")
    outside_before = picture(outside)
    proc = run_rewind("restore", cp[:8], "README.md", cwd=project)  # a path restore
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not os.path.islink(project / "README.md")
    assert picture(outside) == outside_before
    out = mgr.restore(str(project), cp)  # and a full one
    assert out["success"], out
    assert not os.path.islink(project / "src/pkg/core.py")
    assert picture(outside) == outside_before
    assert git_view(project) == files_of(cp)


def test_link_into_outside_dir_stored_in_checkpoint(mgr, project, outside, files_of):
    """A checkpoint that itself holds a link pointing outside gets the link back, as a link;
    files below it in nobody's checkpoint are never written through it."""
    (project / "ext").symlink_to(outside)
    cp = checkpoint(mgr, project, "with an outside link")
    (project / "ext").unlink()
    (project / "ext").mkdir()
    (project / "ext" / "x.txt").write_text("local dir now\n")
    outside_before = picture(outside)
    out = mgr.restore(str(project), cp)
    assert out["success"], out
    assert os.readlink(project / "ext") == str(outside)
    assert picture(outside) == outside_before
    assert git_view(project) == files_of(cp)


# -- refusals ----------------------------------------------------------------------------


def test_unknown_reference(mgr, project, run_rewind, store_dir):
    checkpoint(mgr, project, "only")
    (project / "README.md").write_text("edited\n")
    before, tip = picture(project), ref_tip(store_dir, project)
    for ref in ("nosuchlabel", "99", "deadbeef", "0" * 40, "latest~1"):
        proc = run_rewind("restore", ref, "--yes", cwd=project)
        assert proc.returncode != 0, ref
        one_line_error(proc)
    assert picture(project) == before
    assert ref_tip(store_dir, project) == tip


def test_checkpoint_of_another_project(mgr, project, tmp_path, run_rewind, store_dir):
    other = tmp_path / "other"
    write(other, {"other.txt": "other project\n"})
    foreign = checkpoint(mgr, other, "other's checkpoint")
    checkpoint(mgr, project, "mine")
    (project / "README.md").write_text("edited\n")
    before, tip = picture(project), ref_tip(store_dir, project)
    for ref in (foreign, foreign[:8]):
        proc = run_rewind("restore", ref, "--yes", cwd=project)
        assert proc.returncode == 1  # named as the other project's: restored only with --to
        assert f"is of {other}, not of the project here" in one_line_error(proc)
        out = mgr.restore(str(project), ref)
        assert out["success"] is False and out["error"] == f"Checkpoint '{ref}' not found"
        assert "not a checkpoint of this project" in out["detail"]
    assert picture(project) == before
    assert ref_tip(store_dir, project) == tip


def test_missing_working_directory_suggests_to(mgr, project, run_rewind, tmp_path):
    checkpoint(mgr, project, "before the rm -rf")
    shutil.rmtree(project)
    proc = run_rewind("restore", "1", "-C", project, "--yes", cwd=tmp_path)
    assert proc.returncode != 0
    line = one_line_error(proc)
    assert "--to" in line and str(project) in line
    assert not project.exists()
    proc = run_rewind("undo", "-C", project, cwd=tmp_path)
    assert proc.returncode != 0
    one_line_error(proc)
    assert not project.exists()


def _corrupt_config(store_dir):
    (store_dir / "config").write_bytes(b"[core\n\x00\x01garbage")


def _garbage_head(store_dir):
    (store_dir / "HEAD").write_bytes(b"garbage\n")


def _truncate_loose_objects(store_dir):
    for path in (store_dir / "objects").glob("??/*"):
        path.chmod(0o644)
        path.write_bytes(b"")


def _garbage_loose_commits(store_dir):
    repo = pygit2.Repository(str(store_dir))
    for ref in repo.references:
        if ref.startswith("refs/hermes/"):
            oid = str(repo.references[ref].target)
            path = store_dir / "objects" / oid[:2] / oid[2:]
            path.chmod(0o644)
            path.write_bytes(b"\x78\x9c garbage that is not zlib")


def _truncate_pack(store_dir, store_git):
    store_git("repack", "-a", "-d", "-q")
    packs = list((store_dir / "objects" / "pack").glob("*.pack"))
    assert packs
    for pack in packs:
        pack.chmod(0o644)
        os.truncate(pack, 100)


def _garbage_pack_files(store_dir, store_git):
    store_git("repack", "-a", "-d", "-q")
    for path in (store_dir / "objects" / "pack").glob("pack-*"):
        path.chmod(0o644)
        path.write_bytes(os.urandom(300))


CORRUPTIONS = {
    # name: (corrupt(store_dir, store_git), a correct restore in spite of it is acceptable)
    "config-garbage": (lambda d, g: _corrupt_config(d), False),
    "loose-objects-truncated": (lambda d, g: _truncate_loose_objects(d), False),
    "loose-commit-garbage": (lambda d, g: _garbage_loose_commits(d), False),
    "pack-truncated": (lambda d, g: _truncate_pack(d, g), False),
    "pack-garbage": (lambda d, g: _garbage_pack_files(d, g), False),
    # the bare store's own HEAD names no project; ignoring garbage in it is fine
    "head-garbage": (lambda d, g: _garbage_head(d), True),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupt_store_refused_clearly(name, mgr, project, run_rewind, store_dir, store_git,
                                       files_of):
    first = checkpoint(mgr, project, "first")
    want = files_of(first)
    (project / "README.md").write_text("second\n")
    checkpoint(mgr, project, "second")
    (project / "README.md").write_text("edited\n")
    (project / "new.txt").write_text("new\n")
    before = picture(project)
    corrupt, may_work = CORRUPTIONS[name]
    corrupt(store_dir, store_git)
    proc = run_rewind("restore", first[:8], "--yes", cwd=project)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    if proc.returncode == 0:
        assert may_work, f"{name}: restore claimed success on a corrupt store:\n{proc.stdout}"
        assert git_view(project) == want
        return
    line = one_line_error(proc)
    assert "corrupt" in line or "unreadable" in line or "missing" in line, line
    assert picture(project) == before
    out = manager(store_dir.parent.parent).restore(str(project), first)
    assert out["success"] is False and out["error"]
    assert picture(project) == before


def test_symlinked_dir_named_restore_through_the_api(mgr, project, outside, files_of):
    """The API restores a named directory that became a symlink without a dry run first:
    the scoped pre-rollback capture must drop what it had tracked below the link."""
    cp = checkpoint(mgr, project, "src is a directory")
    shutil.rmtree(project / "src")
    (project / "src").symlink_to(outside)
    outside_before = picture(outside)
    out = mgr.restore(str(project), cp, "src")
    assert out["success"], out
    assert picture(outside) == outside_before
    assert not os.path.islink(project / "src")
    assert git_view(project) == files_of(cp)
