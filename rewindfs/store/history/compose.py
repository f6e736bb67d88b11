"""Restore targets no single checkpoint holds: a stored tree with some paths taken from others.

Reverting agent steps puts each file back as it was before the first reverted
step that changed it. When a person edited a file between two steps, that state
exists in no one checkpoint; a commit composed here holds it. The commit is on
no ref (history and the mount never see it) and git gc drops it in due course.
"""

from __future__ import annotations

import os

import pygit2

from rewindfs.store.history.chain import Checkpoint, load
from rewindfs.store.history.files.trees import Entry
from rewindfs.store.history.signature import signature
from rewindfs.store.history.trailers import compose_message


def compose(repo: pygit2.Repository, base_tree: str, overrides: dict[bytes, Entry | None],
            reason: str, parent: str | None = None) -> Checkpoint:
    """A checkpoint (outside any history) of `base_tree` with `overrides` applied:
    each path set to its entry, or removed when the entry is None."""
    index = pygit2.Index()
    index.read_tree(repo[base_tree])
    for path, entry in sorted(overrides.items()):
        name = os.fsdecode(path)
        if entry is None:
            if name in index:
                index.remove(name)
        else:
            index.add(pygit2.IndexEntry(name, pygit2.Oid(hex=entry.oid), entry.mode))
    tree = index.write_tree(repo)
    sig = signature()
    parents = [pygit2.Oid(hex=parent)] if parent else []
    oid = repo.create_commit(None, sig, sig, compose_message(reason, {}), tree, parents)
    return load(repo, str(oid))
