"""Compare-and-swap of refs (store.history.refupdate), on a real store: a ref moved by
another writer since it was read is never overwritten, and that loss is told apart
from a held lock file and from a real failure. The checkpoint, notes and delete code
all go through it (before, their check of libgit2's message matched neither loss, so
a checkpoint that lost a race to Hermes failed instead of retrying)."""

from __future__ import annotations

import pygit2
import pytest

from rewindfs.errors import StoreError
from rewindfs.store.history import refupdate


@pytest.fixture
def repo(tmp_path):
    return pygit2.init_repository(str(tmp_path / "store"), bare=True)


def commit(repo, text: str) -> pygit2.Oid:
    sig = pygit2.Signature("t", "t@t", 0, 0)
    return repo.create_commit(None, sig, sig, text, repo.TreeBuilder().write(), [])


def test_a_ref_moved_since_it_was_read_is_kept(repo):
    one, two, three = (commit(repo, t) for t in "123")
    repo.references.create("refs/x", one)
    stale = repo.references.get("refs/x")
    assert refupdate.swap(repo, "refs/x", repo.references.get("refs/x"), two, "m") is None
    assert refupdate.swap(repo, "refs/x", stale, three, "m") == refupdate.MOVED
    assert refupdate.swap(repo, "refs/x", stale, None, "m") == refupdate.MOVED  # no delete
    assert repo.references.get("refs/x").target == two


def test_a_ref_that_appeared_is_kept(repo):
    one, two = commit(repo, "1"), commit(repo, "2")
    repo.references.create("refs/y", one)
    assert refupdate.swap(repo, "refs/y", None, two, "m") == refupdate.MOVED
    assert repo.references.get("refs/y").target == one


def test_a_held_lock_is_not_a_move(repo, tmp_path):
    one, two = commit(repo, "1"), commit(repo, "2")
    repo.references.create("refs/z", one)
    (tmp_path / "store" / "refs" / "z.lock").write_text("")
    assert refupdate.swap(repo, "refs/z", repo.references.get("refs/z"), two, "m") == \
        refupdate.LOCKED
    assert repo.references.get("refs/z").target == one


def test_other_failures_are_errors(repo):
    one = commit(repo, "1")
    with pytest.raises(StoreError):
        refupdate.swap(repo, "refs/bad..name", None, one, "m")
