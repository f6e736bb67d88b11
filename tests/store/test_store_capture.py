"""What a checkpoint captures: ignore rules, size cap, nested repos, special files,
unreadable files, the no-change case and the guards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pygit2
import pytest
from conftest import rewind_env

from rewindfs.errors import NotFound, Refused
from rewindfs.store import Limits, take

MiB = 1024 * 1024
BLOB = pygit2.enums.FileMode.BLOB
EXEC = pygit2.enums.FileMode.BLOB_EXECUTABLE
LINK = pygit2.enums.FileMode.LINK


def write(root: Path, rel: str, data: bytes | str = b"x\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def ref_target(store_dir: Path, h16: str) -> str | None:
    repo = pygit2.Repository(str(store_dir))
    ref = repo.references.get(f"refs/hermes/{h16}")
    return str(ref.target) if ref is not None else None


# -- ignore rules -------------------------------------------------------------------


def test_default_excludes_not_captured(store, project, files_of):
    ignored = [
        "node_modules/left-pad/index.js", "sub/node_modules/x.js", ".env", ".env.local",
        ".env.production", "app.log", "logs/deep/server.log", "__pycache__/m.cpython-311.pyc",
        "src/pkg/__pycache__/core.cpython-311.pyc", "src/pkg/core.pyc", ".venv/bin/python",
        "dist/bundle.js", "build/out.o", ".DS_Store", "archive.zip", ".pytest_cache/v/x",
        "lib.so", ".worktrees/feature/file.txt",
    ]
    for rel in ignored:
        write(project, rel)
    kept = ["envy.txt", "src/environment.py", "logbook.txt", "src/build.py"]
    for rel in kept:
        write(project, rel)
    files = files_of(take(store, project, "first").commit)
    for rel in ignored:
        assert rel.encode() not in files, rel
    for rel in kept:
        assert rel.encode() in files, rel
    assert b"README.md" in files


def test_nested_gitignore_at_several_levels(store, project, files_of):
    write(project, ".gitignore", "*.tmp\n")
    write(project, "a/.gitignore", "generated/\n")
    write(project, "a/b/.gitignore", "local.cfg\n/anchored.txt\n")
    write(project, "a/b/c/.gitignore", "*.cfg\n")
    ignored = ["top.tmp", "a/x.tmp", "a/generated/g.txt", "a/b/local.cfg", "a/b/c/other.tmp",
               "a/b/anchored.txt", "a/b/c/any.cfg"]
    kept = ["a/keep.txt", "a/b/keep.cfg", "local.cfg", "generated/at-root-is-kept.txt",
            "a/b/c/anchored.txt", "a/anchored.txt"]
    for rel in ignored + kept:
        write(project, rel)
    files = files_of(take(store, project, "first").commit)
    for rel in ignored:
        assert rel.encode() not in files, rel
    for rel in kept + [".gitignore", "a/.gitignore", "a/b/.gitignore", "a/b/c/.gitignore"]:
        assert rel.encode() in files, rel


@pytest.mark.xfail(strict=True, reason="libgit2 1.9 does not let a deeper .gitignore "
                   "re-include a file a parent pattern ignores (git does); known difference")
def test_negation_in_nested_gitignore_matches_git(store, project, files_of):
    """`!pattern` in a deeper .gitignore re-includes a file a parent .gitignore excluded.

    git (and so Hermes, which stages with `git add -A`) captures a/b/c/important.tmp.
    """
    write(project, ".gitignore", "*.tmp\n")
    write(project, "a/b/c/.gitignore", "!important.tmp\n")
    write(project, "a/b/c/important.tmp")
    write(project, "a/b/c/other.tmp")
    files = files_of(take(store, project, "first").commit)
    assert b"a/b/c/other.tmp" not in files
    assert b"a/b/c/important.tmp" in files


def test_newly_ignored_file_leaves_next_checkpoint(store, project, files_of):
    """A file captured once and then ignored (say a .env the user only now excludes)
    must not stay in every later checkpoint: the index is a stat cache, not a
    "tracked files" list the user can edit."""
    write(project, "scratch.txt", "s\n")
    write(project, "credentials.json", "{}\n")
    first = files_of(take(store, project, "first").commit)
    assert b"scratch.txt" in first and b"credentials.json" in first
    write(project, ".gitignore", "scratch.txt\n")
    write(project, ".rewindignore", "credentials.json\n")
    second = files_of(take(store, project, "second").commit)
    assert b".gitignore" in second
    assert b"scratch.txt" not in second
    assert b"credentials.json" not in second


def test_project_git_info_exclude(store, project, files_of, git_repo_factory):
    git_repo_factory(project, commit=False)
    write(project, ".git/info/exclude", "private.txt\nsecrets/\n")
    write(project, "private.txt")
    write(project, "secrets/key.pem")
    write(project, "public.txt")
    files = files_of(take(store, project, "first").commit)
    assert b"private.txt" not in files
    assert b"secrets/key.pem" not in files
    assert b"public.txt" in files
    assert not any(p.startswith(b".git/") for p in files)


def test_rewindignore_at_project_root(store, project, files_of):
    write(project, ".rewindignore", "scratch/\n*.bak\n")
    write(project, "scratch/notes.txt")
    write(project, "src/old.bak")
    write(project, "src/new.txt")
    files = files_of(take(store, project, "first").commit)
    assert b"scratch/notes.txt" not in files
    assert b"src/old.bak" not in files
    assert b"src/new.txt" in files
    # .rewindignore edits take effect on the next checkpoint
    write(project, ".rewindignore", "*.bak\n")
    files = files_of(take(store, project, "second").commit)
    assert b"scratch/notes.txt" in files
    assert b"src/old.bak" not in files


def test_extra_excludes(store, project, files_of):
    write(project, "data/big.csv")
    write(project, "notes.txt")
    files = files_of(take(store, project, "first", extra_excludes=("data/",)).commit)
    assert b"data/big.csv" not in files
    assert b"notes.txt" in files


# -- size cap -----------------------------------------------------------------------


def test_size_cap_boundary(store, project, files_of):
    limits = Limits(max_file_size=1 * MiB)
    write(project, "exact.bin", b"a" * MiB)
    write(project, "over.bin", b"b" * (MiB + 1))
    result = take(store, project, "first", limits=limits)
    assert result.taken
    files = files_of(result.commit)
    assert files[b"exact.bin"][1] == b"a" * MiB
    assert b"over.bin" not in files
    assert result.skipped_files.get("oversize") == ["over.bin"]
    assert "unreadable" not in result.skipped_files


def test_tracked_file_growing_over_cap_disappears(store, project, files_of):
    limits = Limits(max_file_size=1 * MiB)
    write(project, "grows.bin", b"small\n")
    first = take(store, project, "first", limits=limits)
    assert b"grows.bin" in files_of(first.commit)
    write(project, "grows.bin", b"g" * (MiB + 10))
    second = take(store, project, "second", limits=limits)
    assert second.taken
    assert b"grows.bin" not in files_of(second.commit)
    assert second.skipped_files.get("oversize") == ["grows.bin"]
    # shrinking back below the cap brings it back
    write(project, "grows.bin", b"small again\n")
    third = take(store, project, "third", limits=limits)
    assert files_of(third.commit)[b"grows.bin"][1] == b"small again\n"


def test_size_cap_via_manager_max_file_size_mb(home, project, files_of):
    from rewindfs.agent.manager import CheckpointManager

    mgr = CheckpointManager(enabled=True, base=home / "checkpoints", max_file_size_mb=1)
    write(project, "exact.bin", b"a" * MiB)
    write(project, "over.bin", b"b" * (MiB + 1))
    result = mgr.take(str(project), "first")
    files = files_of(result.commit)
    assert b"exact.bin" in files and b"over.bin" not in files
    assert result.skipped_files["oversize"] == ["over.bin"]


# -- nested git repositories --------------------------------------------------------


def test_nested_repos_captured_as_regular_files(store, project, files_of, git_repo_factory):
    git_repo_factory(project / "vendor" / "lib",
                     {"lib.py": b"print('lib')\n", "sub/deep.txt": b"deep\n"})
    git_repo_factory(project / "empty-repo", commit=False)
    write(project, "empty-repo/draft.txt", "draft\n")
    result = take(store, project, "first")
    files = files_of(result.commit)
    assert files[b"vendor/lib/lib.py"] == (BLOB, b"print('lib')\n")
    assert files[b"vendor/lib/sub/deep.txt"] == (BLOB, b"deep\n")
    assert files[b"empty-repo/draft.txt"] == (BLOB, b"draft\n")
    assert not any(mode == pygit2.enums.FileMode.COMMIT for mode, _ in files.values())
    assert not any(b"/.git/" in p or p.startswith(b".git/") for p in files), sorted(files)

    # changes inside the nested repos are picked up by the next checkpoint
    write(project, "vendor/lib/lib.py", "print('changed')\n")
    write(project, "vendor/lib/new_module.py", "NEW = 1\n")
    write(project, "empty-repo/second.txt", "2\n")
    second = take(store, project, "second")
    assert second.taken
    files = files_of(second.commit)
    assert files[b"vendor/lib/lib.py"][1] == b"print('changed')\n"
    assert files[b"vendor/lib/new_module.py"][1] == b"NEW = 1\n"
    assert files[b"empty-repo/second.txt"][1] == b"2\n"

    # deletions inside a nested repo too
    (project / "vendor" / "lib" / "sub" / "deep.txt").unlink()
    third = take(store, project, "third")
    assert b"vendor/lib/sub/deep.txt" not in files_of(third.commit)


def test_nested_repo_tree_entries_are_trees_not_gitlinks(store, project, store_dir,
                                                         git_repo_factory):
    git_repo_factory(project / "inner", {"a.txt": b"a\n"})
    result = take(store, project, "first")
    repo = pygit2.Repository(str(store_dir))
    tree = repo[result.commit].peel(pygit2.Commit).tree
    assert tree["inner"].filemode == pygit2.enums.FileMode.TREE
    assert tree["inner"].type_str == "tree"


def test_nested_repo_respects_its_own_gitignore(store, project, files_of, git_repo_factory):
    git_repo_factory(project / "inner", {"a.txt": b"a\n", ".gitignore": b"*.cache\n"})
    write(project, "inner/x.cache")
    write(project, "inner/node_modules/m.js")
    files = files_of(take(store, project, "first").commit)
    assert b"inner/a.txt" in files
    assert b"inner/x.cache" not in files
    assert b"inner/node_modules/m.js" not in files


# -- special files ------------------------------------------------------------------


def test_symlinks_exec_empty_binary_and_non_utf8_names(store, project, tmp_path, files_of):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("must not be read\n")
    write(project, "target.txt", "target\n")
    os.symlink("target.txt", project / "link")
    os.symlink(str(outside), project / "outlink")
    os.symlink("does/not/exist", project / "dangling")
    script = write(project, "run.sh", "#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    write(project, "empty.txt", b"")
    binary = bytes(range(256)) * 4 + b"\x00\x00\xff"
    write(project, "blob.bin", binary)
    name = b"caf\xe9.txt"
    with open(os.fsencode(str(project)) + b"/" + name, "wb") as fh:
        fh.write(b"latin-1 name\n")

    result = take(store, project, "first")
    assert result.taken
    files = files_of(result.commit)
    assert files[b"link"] == (LINK, b"target.txt")
    assert files[b"outlink"] == (LINK, os.fsencode(str(outside)))
    assert files[b"dangling"] == (LINK, b"does/not/exist")
    assert not any(p.startswith(b"outlink/") for p in files)
    assert files[b"run.sh"] == (EXEC, b"#!/bin/sh\necho hi\n")
    assert files[b"empty.txt"] == (BLOB, b"")
    assert files[b"blob.bin"] == (BLOB, binary)
    assert files[name] == (BLOB, b"latin-1 name\n")
    assert result.skipped_files == {}


def test_symlink_to_dir_inside_nested_repo_not_followed(store, project, tmp_path, files_of,
                                                        git_repo_factory):
    outside = tmp_path / "outside2"
    outside.mkdir()
    (outside / "secret.txt").write_text("no\n")
    git_repo_factory(project / "inner", {"a.txt": b"a\n"})
    os.symlink(str(outside), project / "inner" / "escape")
    files = files_of(take(store, project, "first").commit)
    assert files[b"inner/escape"] == (LINK, os.fsencode(str(outside)))
    assert b"inner/escape/secret.txt" not in files


def test_mode_change_only_is_a_new_checkpoint(store, project, files_of):
    script = write(project, "tool.sh", "#!/bin/sh\n")
    take(store, project, "first")
    script.chmod(0o755)
    second = take(store, project, "chmod")
    assert second.taken
    assert files_of(second.commit)[b"tool.sh"][0] == EXEC


def test_fifo_is_skipped(store, project, files_of):
    os.mkfifo(project / "pipe")
    files = files_of(take(store, project, "first").commit)
    assert b"pipe" not in files
    assert b"README.md" in files


# -- stat cache correctness ---------------------------------------------------------


def test_same_size_rewrite_in_same_second_is_detected(store, project, files_of):
    path = write(project, "racy.txt", "aaaa\n")
    take(store, project, "first")
    path.write_text("bbbb\n")
    second = take(store, project, "second")
    assert second.taken
    assert files_of(second.commit)[b"racy.txt"][1] == b"bbbb\n"


def test_same_size_rewrite_with_restored_mtime_is_detected(store, project, files_of):
    path = write(project, "sneaky.txt", "1111\n")
    old = os.stat(path)
    take(store, project, "first")
    path.write_text("2222\n")
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    second = take(store, project, "second")
    assert second.taken
    assert files_of(second.commit)[b"sneaky.txt"][1] == b"2222\n"


def test_deleted_file_disappears(store, project, files_of):
    take(store, project, "first")
    (project / "docs" / "guide.txt").unlink()
    second = take(store, project, "second")
    assert second.taken
    assert b"docs/guide.txt" not in files_of(second.commit)


def test_file_replaced_by_directory_and_back(store, project, files_of):
    write(project, "thing", "file\n")
    take(store, project, "first")
    (project / "thing").unlink()
    write(project, "thing/inside.txt", "dir\n")
    files = files_of(take(store, project, "second").commit)
    assert files[b"thing/inside.txt"][1] == b"dir\n"
    shutil.rmtree(project / "thing")
    write(project, "thing", "file again\n")
    files = files_of(take(store, project, "third").commit)
    assert files[b"thing"][1] == b"file again\n"


# -- unreadable files ---------------------------------------------------------------

NOBODY_SCRIPT = r"""
import json, sys
from rewindfs.store import Layout, Store, take
from pathlib import Path
store = Store(Layout(Path(sys.argv[1])))
result = take(store, sys.argv[2], "as nobody")
print(json.dumps({"taken": result.taken, "commit": result.commit,
                  "skipped": result.skipped_files}))
"""


def test_unreadable_file_reported_not_fatal(files_of, as_nobody):
    top = Path(tempfile.mkdtemp(prefix="rewind-nobody-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        proj = top / "proj"
        base = top / "hermes" / "checkpoints"
        write(proj, "ok.txt", "readable\n")
        write(proj, "sub/also.txt", "fine\n")
        secret = write(proj, "sub/secret.txt", "root only\n")
        (top / "hermes").mkdir()
        for path in [top, proj, proj / "ok.txt", proj / "sub", proj / "sub" / "also.txt",
                     top / "hermes"]:
            os.chown(path, 65534, 65534)
        os.chown(secret, 0, 0)
        os.chmod(secret, 0)
        env = rewind_env(None, top)
        proc = subprocess.run(
            [*as_nobody, sys.executable, "-c", NOBODY_SCRIPT, str(base), str(proj)],
            capture_output=True, text=True, env=env, timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["taken"] is True
        assert out["skipped"] == {"unreadable": ["sub/secret.txt"]}
        for dirpath, dirnames, filenames in os.walk(top):  # libgit2 refuses foreign owners
            for name in [*dirnames, *filenames]:
                os.lchown(os.path.join(dirpath, name), 0, 0)
        repo = pygit2.Repository(str(base / "store"))
        commit = repo[out["commit"]].peel(pygit2.Commit)
        assert set(_paths(repo, commit.tree)) == {b"ok.txt", b"sub/also.txt"}
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _paths(repo, tree, prefix=b""):
    for entry in tree:
        if entry.filemode == pygit2.enums.FileMode.TREE:
            yield from _paths(repo, repo[entry.id], prefix + entry.raw_name + b"/")
        else:
            yield prefix + entry.raw_name


# -- no changes ---------------------------------------------------------------------


def test_no_changes_writes_nothing(store, project, store_dir):
    first = take(store, project, "first")
    objects_before = sorted(p.name for p in (store_dir / "objects").rglob("*"))
    second = take(store, project, "second")
    assert second.taken is False
    assert second.skipped
    assert second.commit == first.commit
    assert ref_target(store_dir, first.project) == first.commit
    assert sorted(p.name for p in (store_dir / "objects").rglob("*")) == objects_before


def test_touch_without_content_change_is_no_change(store, project, store_dir):
    first = take(store, project, "first")
    os.utime(project / "README.md")
    (project / "docs" / "guide.txt").write_text("line 1\nline 2\nline 3\n")
    second = take(store, project, "second")
    assert second.taken is False
    assert ref_target(store_dir, first.project) == first.commit


def test_empty_project_writes_no_checkpoint(store, tmp_path, store_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = take(store, empty, "nothing")
    assert result.taken is False
    assert result.commit is None


def test_cli_prints_no_changes(run_rewind, project):
    run_rewind("checkpoint", project, check=True)
    proc = run_rewind("checkpoint", project, check=True)
    assert "no changes" in proc.stdout
    assert "taken" not in proc.stdout


# -- guards -------------------------------------------------------------------------


def test_refuses_root(store):
    with pytest.raises(Refused):
        take(store, "/", "root")


def test_refuses_home(store, tmp_path, monkeypatch):
    fake_home = tmp_path / "the-home"
    fake_home.mkdir()
    (fake_home / "notes.txt").write_text("n\n")
    monkeypatch.setenv("HOME", str(fake_home))
    with pytest.raises(Refused):
        take(store, fake_home, "home")
    with pytest.raises(Refused):
        take(store, str(fake_home / "."), "home again")


def test_missing_dir_not_found(store, tmp_path):
    with pytest.raises(NotFound):
        take(store, tmp_path / "nope", "missing")


def test_max_files_refused_and_nothing_written(store, project, store_dir):
    for i in range(60):
        write(project, f"many/f{i}.txt", f"{i}\n")
    with pytest.raises(Refused):
        take(store, project, "too many", limits=Limits(max_files=50))
    h16 = __import__("rewindfs.store", fromlist=["project_hash"]).project_hash(project)
    assert ref_target(store_dir, h16) is None


def test_max_files_ignores_ignored_directories(store, tmp_path, files_of):
    proj = tmp_path / "webapp"
    for i in range(40):
        write(proj, f"src/f{i}.js", f"{i}\n")
    for i in range(500):
        write(proj, f"node_modules/pkg{i % 20}/f{i}.js", "m\n")
    result = take(store, proj, "ok", limits=Limits(max_files=50))
    assert result.taken
    files = files_of(result.commit)
    assert len(files) == 40


def test_max_files_counts_only_new_files_after_first(store, project):
    # 5 sample files + 40 = 45 <= 50: fine; then 10 more makes 55 > 50.
    for i in range(40):
        write(project, f"f{i}.txt", f"{i}\n")
    take(store, project, "first", limits=Limits(max_files=50))
    for i in range(10):
        write(project, f"g{i}.txt", f"{i}\n")
    with pytest.raises(Refused):
        take(store, project, "second", limits=Limits(max_files=50))
    # After the refusal nothing half-staged leaks into a later, allowed checkpoint.
    for i in range(10):
        (project / f"g{i}.txt").unlink()
    write(project, "README.md", "changed\n")
    third = take(store, project, "third", limits=Limits(max_files=50))
    assert third.taken


def test_capture_reports_progress_while_staging(store, project):
    """A first checkpoint of a big tree reports a running count (the CLI shows it on a
    terminal); outside `reporting_progress` nothing is reported."""
    from rewindfs.store.capture.progress import PROGRESS_EVERY, reporting_progress

    for i in range(2 * PROGRESS_EVERY + 10):
        (project / f"f{i}.txt").write_text(f"{i}\n")
    seen: list[int] = []
    with reporting_progress(seen.append):
        assert take(store, project, "big first").taken
    assert seen[:2] == [PROGRESS_EVERY, 2 * PROGRESS_EVERY]
    (project / "late.txt").write_text("x\n")
    assert take(store, project, "outside the block").taken
    assert len(seen) == 2
