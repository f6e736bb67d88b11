"""One path through a project's checkpoints: where it changed, and what it held.

`log` compares the path in each checkpoint with the same path in the checkpoint
before it (its parent), as `git log --stat -- PATH` does, so a file restored to an
old version shows the change in the restore's checkpoint. A path may be a file, a
symlink or a directory (then every file under it counts).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import pygit2
from pygit2.enums import FileMode

from rewindfs.errors import InvalidInput, NotFound
from rewindfs.store.history.chain import Checkpoint, raw_parent
from rewindfs.store.history.files import trees
from rewindfs.store.history.records import records

ADDED, MODIFIED, DELETED = "added", "modified", "deleted"


@dataclass
class PathChange:
    checkpoint: Checkpoint
    status: str  # added, modified or deleted
    added: int  # lines
    deleted: int
    binary: bool = False


def log(repo: pygit2.Repository, checkpoints: list[Checkpoint], path: bytes
        ) -> list[PathChange]:
    """The checkpoints (newest first, as given) in which `path` differs from the previous one.

    A checkpoint listed from its record (store.history.records.records) is compared only when its
    record names a changed path at, under or above `path`: the record is what a diff
    against the same parent said, so the others cannot differ there.
    """
    out = []
    for cp in checkpoints:
        record = cp.record
        if record is not None and record.changes is not None \
                and not _touches(record, path):
            continue
        parent = parent_tree(repo, cp)
        if parent is UNKNOWN:
            continue  # its parent is where the history breaks: what it changed is unknown
        found = change(repo, parent, cp.tree_id, path)
        if found is not None:
            status, added, deleted, binary = found
            out.append(PathChange(cp, status, added, deleted, binary))
    return out


def change(repo: pygit2.Repository, old_tree: str | None, new_tree: str, path: bytes
           ) -> tuple[str, int, int, bool] | None:
    """How `path` changed from `old_tree` (None: nothing) to `new_tree`: (status, lines
    added, lines deleted, binary), or None when it did not."""
    new = _object_id(repo, new_tree, path)
    old = _object_id(repo, old_tree, path) if old_tree else None
    if new == old:
        return None
    status = ADDED if old is None else DELETED if new is None else MODIFIED
    return (status, *_line_counts(repo, old, new))


def _touches(record: records.Record, path: bytes) -> bool:
    paths = record.changed_paths()
    if not path:
        return bool(paths)
    name = os.fsdecode(path)
    below, above = name + "/", name.startswith
    return any(p == name or p.startswith(below) or above(p + "/") for p in paths)


def read_file(repo: pygit2.Repository, checkpoint: Checkpoint, path: bytes) -> bytes:
    """The bytes of the file (or a symlink's target) at `path` in the checkpoint."""
    return trees.blob_bytes(repo, _file_entry(repo, checkpoint, path).oid)


def copy_file(repo: pygit2.Repository, checkpoint: Checkpoint, path: bytes,
              sink: Callable[[bytes], object]) -> int:
    """read_file's bytes handed to `sink`, in pieces when the file is big (never whole in
    memory: trees.Streamed); returns how many."""
    return trees.copy_blob(repo, _file_entry(repo, checkpoint, path).oid, sink)


def _file_entry(repo: pygit2.Repository, checkpoint: Checkpoint, path: bytes) -> trees.Entry:
    entry = trees.lookup(repo, checkpoint.tree_id, path)
    if entry is None:
        name = os.fsdecode(path)
        if trees.is_dir(repo, checkpoint.tree_id, path):
            raise InvalidInput(f"{name!r} is a directory in checkpoint {checkpoint.short}")
        raise NotFound(f"{name!r} is not in checkpoint {checkpoint.short}")
    return entry


def ever_existed(repo: pygit2.Repository, checkpoints: list[Checkpoint], path: bytes) -> bool:
    return any(_object_id(repo, cp.tree_id, path) is not None for cp in checkpoints)


UNKNOWN = "?"  # a parent that cannot be read (a break in the history, said by the listing)


def parent_tree(repo: pygit2.Repository, cp: Checkpoint) -> str | None:
    """The tree of the checkpoint's parent; None: it has none (a root, or pruned and
    gone), UNKNOWN: it has one that cannot be read."""
    if cp.parent_id:
        try:
            return str(repo[cp.parent_id].peel(pygit2.Commit).tree_id)
        except (KeyError, ValueError, pygit2.GitError):
            return UNKNOWN
    parent = raw_parent(repo, cp.id)  # past a prune boundary, while it exists
    return str(parent.tree_id) if parent is not None else None


def _object_id(repo: pygit2.Repository, tree_id: str, path: bytes) -> str | None:
    if not path:
        return tree_id
    item = trees.entry_at(repo, tree_id, path)
    if item is None or item.filemode == int(FileMode.COMMIT):
        return None
    return str(item.id)


def _line_counts(repo: pygit2.Repository, old: str | None, new: str | None
                 ) -> tuple[int, int, bool]:
    objects = [repo[oid] if oid else None for oid in (old, new)]
    if any(isinstance(o, pygit2.Tree) for o in objects):
        empty = repo[repo.TreeBuilder().write()]
        a, b = (o if isinstance(o, pygit2.Tree) else empty for o in objects)
        stats = a.diff_to_tree(b).stats
        return stats.insertions, stats.deletions, False
    patch = pygit2.Patch.create_from(objects[0], objects[1])
    _, added, deleted = patch.line_stats
    return added, deleted, patch.delta.is_binary

