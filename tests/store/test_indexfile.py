"""store.objects.indexfile reads what git wrote: every entry and the cache tree, in index
formats 2, 3 and 4, compared with `git ls-files -s` and `git rev-list --indexed-objects`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import isolated_git_env

from rewindfs.store.objects.indexfile import could_hold_its_entries, index_objects


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True,
                          env=isolated_git_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                                               GIT_COMMITTER_NAME="t",
                                               GIT_COMMITTER_EMAIL="t@t")).stdout.decode()


@pytest.mark.parametrize("version", [2, 3, 4])
def test_entries_and_cache_tree_as_git_lists_them(tmp_path, version):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for name in ["a.txt", "src/b.py", "src/deep/er/c.txt", "src/deep/d.txt", "long/" +
                 "x" * 120 + ".txt", "zz/é.txt"]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name * 3)
    git(repo, "add", "-A")
    if version == 3:  # an intent-to-add entry needs the extended flags (version 3)
        (repo / "later.txt").write_text("later\n")
        git(repo, "add", "-N", "later.txt")
    git(repo, "update-index", "--index-version", str(version))
    git(repo, "write-tree")  # records the cache tree
    (repo / "src" / "b.py").write_text("changed\n")
    git(repo, "add", "src/b.py")  # invalidates the cache tree along src/
    data = (repo / ".git" / "index").read_bytes()
    assert int.from_bytes(data[4:8], "big") == version
    assert could_hold_its_entries(repo / ".git" / "index")
    entries, trees = index_objects(data)
    listed = [line.split(None, 3) for line in git(repo, "ls-files", "-s", "-z").split("\0")
              if line]
    assert [(p.encode(), oid) for _, oid, _, p in listed] == entries
    indexed = set(git(repo, "rev-list", "--objects", "--no-object-names",
                      "--indexed-objects").split())
    blobs = {oid for _, oid in entries}
    assert {oid for _, oid in trees} == indexed - blobs
    paths = {path for path, _ in trees}
    assert b"src/deep/er" in paths and b"zz" in paths
    assert b"src" not in paths and b"" not in paths  # invalidated by the second add


def test_not_an_index_is_refused():
    with pytest.raises(ValueError):
        index_objects(b"garbage" * 10)


def test_a_header_counting_more_entries_than_fit_is_damaged(tmp_path):
    """What libgit2 is never given (it sizes its tables by the count before reading)."""
    path = tmp_path / "index"

    def index(count: int, entries: int) -> Path:
        path.write_bytes(b"DIRC" + (2).to_bytes(4, "big") + count.to_bytes(4, "big")
                         + b"e" * 62 * entries + b"c" * 20)
        return path
    assert could_hold_its_entries(tmp_path / "missing")
    assert could_hold_its_entries(index(0, 0))
    assert could_hold_its_entries(index(3, 3))
    assert not could_hold_its_entries(index(4, 3))
    assert not could_hold_its_entries(index(0x67617262, 3))
    path.write_bytes(b"DIRC\0\0")
    assert not could_hold_its_entries(path)
    path.write_bytes(b"CRID" + bytes(28))
    assert not could_hold_its_entries(path)
