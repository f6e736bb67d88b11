"""Copying another agent's snapshot trees into the shared store (one new pack).

Only what the store lacks is copied: a tree the store already has is taken to
have everything below it (git's own assumption when it fetches). Each copied
object is re-hashed from its content, so a damaged object of theirs can never
enter the store under a wrong name. A tree whose objects are not all there any
more (their gc pruned part of it) is not copied at all: the store never gets a
tree it cannot read back in full.

The caller holds the store's writers lock (store.objects.writers) until the
copied trees are named by a commit or have served their purpose, so a gc cannot
take them away in between.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import FileMode, ObjectType

from rewindfs.errors import NotFound
from rewindfs.store.foreign.objects import ForeignObjects
from rewindfs.store.objects.packwrite import BLOB, COMMIT, TREE, PackWriter, deflate
from rewindfs.store.objects.repo import Store

_PACK_TYPE = {int(ObjectType.BLOB): BLOB, int(ObjectType.TREE): TREE,
              int(ObjectType.COMMIT): COMMIT}
_NAMES = {BLOB: b"blob", TREE: b"tree", COMMIT: b"commit"}


@dataclass
class Copied:
    trees: list[str] = field(default_factory=list)  # now in the store (copied or there before)
    gone: dict[str, str] = field(default_factory=dict)  # tree -> why it could not be copied
    objects: int = 0
    bytes: int = 0


def copy_trees(store: Store, source: ForeignObjects, tree_ids: list[str]) -> Copied:
    """Copy each tree (with everything below it) the store lacks; report the gone ones."""
    out = Copied()
    odb = store.repo.odb
    pack = PackWriter(store.layout.store / "objects")
    try:
        for tree_id in dict.fromkeys(tree_ids):
            if tree_id in odb or bytes.fromhex(tree_id) in pack:
                out.trees.append(tree_id)
                continue
            try:
                objects = _collect(source, odb, pack, tree_id)
            except NotFound as exc:
                out.gone[tree_id] = str(exc)
                continue
            for raw_oid, kind, data in objects:
                pack.add(raw_oid, kind, len(data), deflate(data))
                out.objects += 1
                out.bytes += len(data)
            out.trees.append(tree_id)
        pack.finish()
    except BaseException:
        pack.abort()
        raise
    return out


def _collect(source: ForeignObjects, odb: pygit2.Odb, pack: PackWriter,
             tree_id: str) -> list[tuple[bytes, int, bytes]]:
    """Every object under `tree_id` that neither the store nor the pack has, read and
    verified (NotFound when one is gone)."""
    found: list[tuple[bytes, int, bytes]] = []
    seen: set[str] = set()
    todo = [tree_id]
    while todo:
        oid = todo.pop()
        if oid in seen:
            continue
        seen.add(oid)
        kind, data = source.raw(oid)
        packed = _PACK_TYPE.get(kind)
        if packed is None:
            raise NotFound(f"object {oid[:8]} is not a tree or file")
        raw = bytes.fromhex(oid)
        if _hash(packed, data) != raw:
            raise NotFound(f"object {oid[:8]} is damaged in the agent's snapshots")
        found.append((raw, packed, data))
        if packed != TREE:
            continue
        for entry in source.repo[oid]:
            if entry.filemode == int(FileMode.COMMIT):
                continue  # a gitlink names another repository's commit: never copied
            child = str(entry.id)
            if child not in odb and bytes.fromhex(child) not in pack:
                todo.append(child)
    return found


def _hash(kind: int, data: bytes) -> bytes:
    h = hashlib.sha1(_NAMES[kind] + b" %d\0" % len(data), usedforsecurity=False)
    h.update(data)
    return h.digest()
