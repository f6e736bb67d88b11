"""What a checkpoint changed and holds: files changed, lines added and removed, bytes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pygit2

from rewindfs.store.history import bounds
from rewindfs.store.history.chain import Checkpoint, raw_parent
from rewindfs.store.history.checkpoint import Stats
from rewindfs.store.history.files import trees
from rewindfs.store.history.trailers import STATS_TRAILER
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout, is_remote_key

if TYPE_CHECKING:  # the diff's modules load only for a diff
    from rewindfs.store.history.files.diff import DiffResult


def stats(repo: pygit2.Repository, checkpoint: Checkpoint, key: str | None = None) -> Stats:
    """Files changed and lines added/removed against the previous checkpoint.

    rewindfs records them in the commit when it is made; for commits written by
    Hermes they are computed here. A checkpoint whose parent is gone (the first one,
    or the oldest kept after gc) counts its files, with no line counts. `key`: the
    project's; a fetched project's trees are compared only within their bounds
    (store.history.bounds): past them, a root's file count (from the measure) or
    nothing.
    """
    recorded = checkpoint.trailers.get(STATS_TRAILER)
    if recorded and (parsed := Stats.decode(recorded)):
        return parsed
    if checkpoint.record is not None and checkpoint.record.stats is not None:
        return Stats(*checkpoint.record.stats)
    parent = raw_parent(repo, checkpoint.id)
    from rewindfs.store.history.files.treestats import tree_stats  # (Hermes's: no trailer)

    old = str(parent.tree_id) if parent is not None else None
    if key is not None and is_remote_key(key):
        measured = [bounds.measure(repo, t) for t in (checkpoint.tree_id, old) if t]
        if not all(m.ok for m in measured):
            size = measured[0].size
            return Stats(size.files if old is None and size is not None else 0, 0, 0)
    return tree_stats(repo, old, checkpoint.tree_id)


def since_previous(repo: pygit2.Repository, checkpoint: Checkpoint,
                   paths: list[bytes] | None = None) -> DiffResult:
    """What `checkpoint` changed against the previous checkpoint (the first one, or the
    oldest kept after gc: every file it holds, as added)."""
    from rewindfs.store.history.files.diff import between

    parent = raw_parent(repo, checkpoint.id)
    old = str(parent.tree_id) if parent is not None else str(repo.TreeBuilder().write())
    return between(repo, old, checkpoint.tree_id, paths)


def total_size(repo: pygit2.Repository, layout: Layout, h16: str, checkpoint: Checkpoint) -> int:
    """Bytes of every file in the checkpoint (what a first checkpoint stored).

    Reading each blob's header costs ~50 us per loose object, so the answer is
    cached per commit (a commit never changes) with the store's other caches.
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
    if is_remote_key(h16):  # measured, not walked: exact however often a subtree repeats
        measured = bounds.measure(repo, checkpoint.tree_id).size
        return measured.total if measured is not None else 0
    odb = repo.odb
    size = sum(odb.read_header(pygit2.Oid(hex=e.oid))[1]
               for e in trees.walk_entries(repo, checkpoint.tree_id))
    try:
        private.ensure_dir(cache.parent)
        private.write_atomic(cache, json.dumps({**known, checkpoint.id: size}), durable=False)
    except OSError:
        pass  # only a cache
    return size
