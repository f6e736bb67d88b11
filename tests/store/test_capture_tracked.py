"""Files git tracks are captured whatever the excludes say (issue 47: excludes are for what
git does not track): `env/`, `build/`, `.env.*` and the project's own .gitignore leave
untracked files out, never tracked ones. What the person told rewindfs to leave out
(.rewindignore, extra excludes, the secret defaults) still leaves a tracked file out, and
the checkpoint names it. The project's git index is untrusted input: its paths never
reach outside the project, and one that cannot be read is said, not a failed checkpoint."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pygit2
from conftest import isolated_git_env, make_git_repo

from rewindfs.store import take

GIT = isolated_git_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                       GIT_COMMITTER_EMAIL="t@t")
TRACKED = {"app/env/prod.py": b"DB = 'prod'\n", "app/build/steps.py": b"steps = [1]\n",
           "app/main.py": b"print(1)\n", ".env.example": b"TOKEN=\n",
           "lib/vendored.so": b"\x7fELF\n"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], env=GIT, check=True, capture_output=True)


def put(root: Path, rel: str, data: bytes = b"x\n") -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)


def test_tracked_files_the_default_excludes_match_are_captured(store, tmp_path, files_of):
    root = tmp_path / "proj"
    make_git_repo(root, TRACKED)
    put(root, "app/env/untracked.py")      # not tracked: the excludes still apply
    put(root, "app/build/out.o")
    put(root, ".env.local")
    files = files_of(take(store, root, "first").commit)
    for rel, data in TRACKED.items():
        assert files.get(rel.encode(), (0, None))[1] == data, rel
    for rel in ("app/env/untracked.py", "app/build/out.o", ".env.local"):
        assert rel.encode() not in files, rel


def test_a_tracked_file_under_an_excluded_directory_is_followed(store, tmp_path, files_of):
    """Edited, deleted, back: each checkpoint holds it as it is."""
    root = tmp_path / "proj"
    make_git_repo(root, TRACKED)
    take(store, root, "first")
    put(root, "app/env/prod.py", b"DB = 'edited'\n")
    assert files_of(take(store, root, "edit").commit)[b"app/env/prod.py"][1] == \
        b"DB = 'edited'\n"
    os.unlink(root / "app/env/prod.py")
    assert b"app/env/prod.py" not in files_of(take(store, root, "gone").commit)
    put(root, "app/env/prod.py", b"DB = 'back'\n")   # git's index did not change meanwhile
    assert files_of(take(store, root, "back").commit)[b"app/env/prod.py"][1] == b"DB = 'back'\n"


def test_a_file_tracked_later_is_captured_then(store, tmp_path, files_of):
    root = tmp_path / "proj"
    make_git_repo(root, {"a.txt": b"a\n"})
    put(root, "build/gen.py", b"generated\n")
    assert b"build/gen.py" not in files_of(take(store, root, "untracked").commit)
    git(root, "add", "build/gen.py")
    assert files_of(take(store, root, "tracked").commit)[b"build/gen.py"][1] == b"generated\n"


def test_a_project_inside_a_repository(store, tmp_path, files_of):
    """mono/frontend is the project; git's index names its files from mono."""
    mono = tmp_path / "mono"
    make_git_repo(mono, {"frontend/package.json": b"{}\n", "frontend/build/keep.js": b"k\n",
                         "backend/build/other.py": b"o\n"})
    files = files_of(take(store, mono / "frontend", "first").commit)
    assert files[b"build/keep.js"][1] == b"k\n"
    assert not any(p.startswith(b"backend") or p.startswith(b"other") for p in files)


def test_a_new_ignore_rule_does_not_drop_a_tracked_file(store, tmp_path, files_of):
    root = tmp_path / "proj"
    make_git_repo(root, {"lib/x.py": b"x\n", "y.py": b"y\n"})
    take(store, root, "first")
    (root / ".gitignore").write_text("lib/\n")
    files = files_of(take(store, root, "ignored now").commit)
    assert files[b"lib/x.py"][1] == b"x\n"


def test_what_the_person_left_out_stays_out_and_is_named(store, tmp_path, files_of):
    root = tmp_path / "proj"
    key = b"-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----\n"
    make_git_repo(root, {"certs/dev.key": key, "big/blob.dat": b"b\n", "build/a.py": b"a\n"})
    (root / ".rewindignore").write_text("big/\n")
    result = take(store, root, "first")
    files = files_of(result.commit)
    assert b"certs/dev.key" not in files and b"big/blob.dat" not in files
    assert files[b"build/a.py"][1] == b"a\n"
    assert sorted(result.skipped_files["excluded"]) == ["big/blob.dat", "certs/dev.key"]
    # `!pattern` in .rewindignore brings one back, as for files git does not track
    (root / ".rewindignore").write_text("big/\n!certs/dev.key\n")
    result = take(store, root, "second")
    assert files_of(result.commit)[b"certs/dev.key"][1] == key
    assert result.skipped_files["excluded"] == ["big/blob.dat"]


def test_an_index_path_never_reaches_outside_the_project(store, tmp_path, files_of):
    """A planted index naming a file through a symlinked directory: not read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not project content\n")
    root = tmp_path / "proj"
    make_git_repo(root, {"build/a.py": b"a\n"})
    (root / "build" / "link").symlink_to(outside)
    repo = pygit2.Repository(str(root))
    index = repo.index
    index.read()
    index.add(pygit2.IndexEntry("build/link/secret.txt", repo.create_blob(b"x"),
                                pygit2.enums.FileMode.BLOB))
    index.write()
    files = files_of(take(store, root, "first").commit)
    assert files[b"build/a.py"][1] == b"a\n"
    assert not any(b"secret" in p for p in files), sorted(files)


def test_an_index_naming_a_path_up_and_out_is_not_used(store, tmp_path, files_of):
    """`..` in git's index: libgit2 refuses the whole index, and the checkpoint says so."""
    (tmp_path / "outside.txt").write_text("not project content\n")
    root = tmp_path / "proj"
    make_git_repo(root, {"build/a.py": b"a\n", "b.py": b"b\n"})
    repo = pygit2.Repository(str(root))
    index = repo.index
    index.read()
    index.add(pygit2.IndexEntry("zz/outside.txt", repo.create_blob(b"x"),
                                pygit2.enums.FileMode.BLOB))
    index.write()
    # libgit2 and git refuse to write `..` into an index: its bytes, with their checksum
    data = (root / ".git" / "index").read_bytes()[:-20].replace(b"zz/outside", b"../outside")
    (root / ".git" / "index").write_bytes(data + hashlib.sha1(data).digest())
    result = take(store, root, "first")
    files = files_of(result.commit)
    assert files[b"b.py"][1] == b"b\n"
    assert not any(b"outside" in p for p in files), sorted(files)
    [said] = result.skipped_files["git_index"]
    assert "could not be read" in said, said


def test_an_unreadable_git_index_is_said_and_the_checkpoint_taken(store, tmp_path, files_of):
    root = tmp_path / "proj"
    make_git_repo(root, {"build/a.py": b"a\n", "b.py": b"b\n"})
    index = root / ".git" / "index"
    data = bytearray(index.read_bytes())
    data[8:12] = (10**9).to_bytes(4, "big")   # a count no file of its size can hold
    index.write_bytes(bytes(data))
    result = take(store, root, "first")
    assert files_of(result.commit)[b"b.py"][1] == b"b\n"
    [said] = result.skipped_files["git_index"]
    assert str(index) in said, said


def test_a_capture_of_named_paths_takes_a_tracked_file_the_excludes_match(store, tmp_path,
                                                                           files_of):
    """What the hooks do when the stamp names the changed paths: the edited tracked file
    is captured anew, not kept as it was."""
    from rewindfs.store.history import locked, take_locked

    root = tmp_path / "proj"
    make_git_repo(root, TRACKED)
    take(store, root, "first")
    put(root, "app/env/prod.py", b"DB = 'edited'\n")
    put(root, "app/build/new.py", b"new\n")   # not tracked: stays out
    with locked(store, root) as project:
        result = take_locked(project, "scoped", paths=[b"app/env/prod.py", b"app/build"])
    files = files_of(result.commit)
    assert files[b"app/env/prod.py"][1] == b"DB = 'edited'\n"
    assert files[b"app/build/steps.py"][1] == b"steps = [1]\n"
    assert b"app/build/new.py" not in files


def test_a_capture_of_nothing_afresh_after_a_rule_changed_keeps_tracked_files(
        store, tmp_path, files_of):
    """A capture of no path (what a restore's pre-rollback snapshot takes) after the
    exclude files changed drops what they now match, but not what git tracks."""
    from rewindfs.store.history import locked, take_locked

    root = tmp_path / "proj"
    make_git_repo(root, {"lib/x.py": b"x\n", "y.py": b"y\n"})
    take(store, root, "first")
    with open(root / ".git" / "info" / "exclude", "a") as fh:
        fh.write("lib/\n")   # git's own exclude: never for what git tracks
    with locked(store, root) as project:
        store.refresh_excludes(project)
        result = take_locked(project, "nothing afresh", paths=[], allow_empty=True)
    assert files_of(result.commit)[b"lib/x.py"][1] == b"x\n"
