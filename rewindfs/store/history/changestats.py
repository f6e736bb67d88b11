"""What a checkpoint changed and holds: files changed, lines added and removed, bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pygit2

from rewindfs.store.history import trees
from rewindfs.store.history.chain import STATS_TRAILER, Checkpoint, raw_parent
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import write_atomic


@dataclass
class Stats:
    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0

    def encode(self) -> str:
        return f"files={self.files_changed} insertions={self.insertions} deletions={self.deletions}"

    @classmethod
    def decode(cls, text: str) -> Stats | None:
        try:
            fields = dict(part.split("=", 1) for part in text.split())
            return cls(int(fields["files"]), int(fields["insertions"]), int(fields["deletions"]))
        except (KeyError, ValueError):
            return None


def stats(repo: pygit2.Repository, checkpoint: Checkpoint) -> Stats:
    """Files changed and lines added/removed against the previous checkpoint.

    rewindfs records them in the commit when it is made; for commits written by
    Hermes they are computed here. A checkpoint whose parent is gone (the first one,
    or the oldest kept after gc) counts its files, with no line counts.
    """
    recorded = checkpoint.trailers.get(STATS_TRAILER)
    if recorded and (parsed := Stats.decode(recorded)):
        return parsed
    parent = raw_parent(repo, checkpoint.id)
    return tree_stats(repo, parent.tree_id if parent is not None else None, checkpoint.tree_id)


def tree_stats(repo: pygit2.Repository, old_tree: str | None, new_tree: str,
               file_count: int | None = None) -> Stats:
    """Changes from `old_tree` (None: nothing before it) to `new_tree`."""
    if old_tree is None:
        if file_count is None:
            file_count = sum(1 for _ in trees.walk_entries(repo, new_tree))
        return Stats(file_count, 0, 0)
    diff = repo[old_tree].diff_to_tree(repo[new_tree])
    diff.find_similar()
    s = diff.stats
    return Stats(s.files_changed, s.insertions, s.deletions)


def total_size(repo: pygit2.Repository, layout: Layout, h16: str, checkpoint: Checkpoint) -> int:
    """Bytes of every file in the checkpoint (what a first checkpoint stored).

    Reading each blob's header costs ~50 us per loose object, so the answer is
    cached per commit (a commit never changes) next to the project's index.
    """
    cache = layout.sizes_cache(h16)
    try:
        known = json.loads(cache.read_text())
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    if isinstance(known.get(checkpoint.id), int):
        return known[checkpoint.id]
    odb = repo.odb
    size = sum(odb.read_header(pygit2.Oid(hex=e.oid))[1]
               for e in trees.walk_entries(repo, checkpoint.tree_id))
    if cache.parent.is_dir():
        try:
            write_atomic(cache, json.dumps({**known, checkpoint.id: size}))
        except OSError:
            pass  # only a cache
    return size
