"""The pieces of store.remote on their own: URLs and names, carried copies, project names."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from rewindfs.errors import InvalidInput
from rewindfs.store.remote import catalog
from rewindfs.store.remote.carry import carry, likeness, origin, with_origin
from rewindfs.store.remote.names import check_url, redact, validate_name


@pytest.mark.parametrize("url", [
    "/srv/git/c.git", "file:///srv/git/c.git", "git://host/c.git", "ssh://git@host/c.git",
    "git@github.com:me/c.git", "https://example.com/me/c.git", "http://127.0.0.1:8080/c.git",
])
def test_urls_rewindfs_takes(url: str):
    assert check_url(url) == url


@pytest.mark.parametrize("url, why", [
    ("https://me:pw@example.com/c.git", "password"),
    ("ssh://me:pw@example.com/c.git", "password"),
    ("me:pw@example.com:c.git", "password"),
    ("https://token@example.com/c.git", "user name or token"),
    ("ext::sh -c evil", "not supported"),
    ("ftp://example.com/c.git", "unsupported URL scheme"),
    ("-oProxyCommand=evil", "may not start"),
    (" /srv/c.git", "spaces"),
    ("/srv/c.git\n", "control"),
])
def test_urls_refused(url: str, why: str):
    with pytest.raises(InvalidInput, match=why) as caught:
        check_url(url)
    assert "pw@" not in str(caught.value) and "token@" not in str(caught.value)


def test_redact_hides_whatever_precedes_the_at():
    said = "fatal: unable to access 'https://me:pw@h/x/': and https://tok@h/y and ssh://git@h/z"
    assert redact(said) == ("fatal: unable to access 'https://***@h/x/': and https://***@h/y "
                            "and ssh://***@h/z")


@pytest.mark.parametrize("name", ["", "-x", "a/b", "a..b", "x.lock", "x.", "a b", "x" * 65])
def test_bad_remote_names(name: str):
    with pytest.raises(InvalidInput):
        validate_name(name)


def _commit(repo: pygit2.Repository, message: str, parents: list) -> pygit2.Commit:
    sig = pygit2.Signature("t", "t@t", 1_700_000_000, 60)
    tree = repo.TreeBuilder()
    tree.insert("f", repo.create_blob(message.encode()), pygit2.enums.FileMode.BLOB)
    return repo[repo.create_commit(None, sig, sig, message, tree.write(), parents)]


def test_carried_copies_are_stable_and_keep_everything_but_the_parent(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    first = _commit(repo, "first\n", [])
    second = _commit(repo, "second\n\nRewind-Stats: files=1 insertions=1 deletions=1\n",
                     [first.id])
    base = carry(repo, first, None)
    copy = repo[carry(repo, second, base)]
    assert carry(repo, second, base) == str(copy.id)  # made twice: the same id
    assert [str(p) for p in copy.parent_ids] == [base]
    assert copy.tree_id == second.tree_id and copy.author == second.author
    assert copy.message == ("second\n\nRewind-Stats: files=1 insertions=1 deletions=1\n"
                            f"Rewind-Origin: {second.id}\n")
    assert origin(copy) == str(second.id) and origin(second) is None
    assert likeness(copy) == likeness(second)
    assert with_origin(b"plain\n", "ab") == b"plain\n\nRewind-Origin: ab\n"


def _project(remote: str, machine: str, path: str, host: str) -> catalog.RemoteProject:
    return catalog.RemoteProject(remote, machine, "0" * 16, None, path, host, 0.0, False)


def test_names_of_fetched_projects_do_not_depend_on_order():
    one = _project("o", "a" * 16, "/w/app", "laptop")
    two = _project("o", "b" * 16, "/w/app", "sandbox")
    three = _project("o", "c" * 16, "/x/app", "sandbox")
    alone = _project("o", "d" * 16, "/w/tool", "sandbox")
    for order in ([one, two, three, alone], [alone, three, two, one]):
        named = catalog.names(order)
        assert named["tool"] is alone
        assert named["app-laptop"] is one
        assert {named["app-bbbbbbbb"], named["app-cccccccc"]} == {two, three}
