"""The project repository's states that checkpoints recorded, kept alive: one ref per project.

A checkpoint taken before a command that can destroy the project's own `.git` names the
repository's state it recorded (store.projectgit) in its `Rewind-Git-State` trailer: a
commit of the store whose tree describes the refs, HEAD, index, config and hooks, and
whose parents are every commit those refs reach. A trailer keeps nothing from gc, so
`refs/rewind/git/<h16>` points at one commit (empty tree) whose parents are the states
the project's live checkpoints name: git's own gc and prune, Hermes's included, keep
exactly those. It is rebuilt from the checkpoints whenever they change (a state recorded,
a prune, a delete, a sweep, before an explicit gc), so dropping a checkpoint frees its
state; a trailer survives any rewrite that keeps messages (a delete in the middle,
Hermes's prune), so the state follows its checkpoint. A ref with the project's hash as
a path component goes with the project (removal, adopt).

"none" as the trailer's value: the repository did not exist when the checkpoint was
taken (a pre-rollback snapshot of `rewind restore N --git` run where `.git` was gone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pygit2

from rewindfs.errors import RewindError
from rewindfs.store.history import refupdate
from rewindfs.store.history.chain import checkpoints
from rewindfs.store.history.signature import signature
from rewindfs.store.objects.layout import Layout

TRAILER = "Rewind-Git-State"
NONE = "none"  # no repository at all
_HEX40 = re.compile(r"[0-9a-f]{40}")
ATTEMPTS = 5


def state_of(trailers: dict[str, str]) -> str | None:
    """The repository state a checkpoint's trailers name: a commit id, NONE, or None
    (the checkpoint recorded none)."""
    value = trailers.get(TRAILER, "").strip()
    return value if value == NONE or _HEX40.fullmatch(value) else None


def kept(repo: pygit2.Repository, h16: str) -> set[str]:
    """The states the project's keeper holds now."""
    ref = repo.references.get(Layout.git_ref(h16))
    if ref is None:
        return set()
    try:
        return {str(p) for p in ref.peel(pygit2.Commit).parent_ids}
    except (pygit2.GitError, KeyError, ValueError):
        return set()


def rebuild(repo: pygit2.Repository, h16: str, also: Iterable[str] = ()) -> None:
    """Point the project's keeper at exactly the states its live checkpoints name (plus
    `also`: one recorded for a checkpoint not committed yet). When the checkpoints cannot
    be read, nothing is dropped."""
    extra = {s for s in also if _HEX40.fullmatch(s)}
    for _ in range(ATTEMPTS):
        ref = repo.references.get(Layout.git_ref(h16))
        if ref is None and not extra:
            return  # no state kept, none to add: the checkpoints need not be read
        held = kept(repo, h16)
        try:
            named = {s for cp in checkpoints(repo, h16) if (s := state_of(cp.trailers))}
        except (RewindError, pygit2.GitError, KeyError, ValueError):
            named = held
        live = sorted(s for s in (named | extra) - {NONE} if _is_commit(repo, s))
        if set(live) == held and (ref is not None) == bool(live):
            return
        target = _keeper(repo, h16, live) if live else None
        if refupdate.swap(repo, Layout.git_ref(h16), ref, target,
                          "rewind: repository states kept") is None:
            return


def _keeper(repo: pygit2.Repository, h16: str, states: list[str]) -> pygit2.Oid:
    empty = repo.TreeBuilder().write()
    sig = signature()
    return repo.create_commit(None, sig, sig, f"repository states kept for {h16}\n", empty,
                              [pygit2.Oid(hex=s) for s in states])


def _is_commit(repo: pygit2.Repository, oid: str) -> bool:
    try:
        return repo.odb.read_header(pygit2.Oid(hex=oid))[0] == pygit2.enums.ObjectType.COMMIT
    except (KeyError, ValueError, pygit2.GitError):
        return False
