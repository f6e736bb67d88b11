"""Dropping old checkpoints without rewriting history.

Hermes prunes by rebuilding the kept commits, which gives every checkpoint a new
hash. rewindfs instead records the oldest kept checkpoint in the store's
`shallow` file, git's own mechanism for "history stops here": git (log, rev-list,
gc) treats a commit listed there as having no parents, so a later gc reclaims
everything older while every kept checkpoint keeps its id. A labelled checkpoint
older than the boundary is listed too, so it survives on its own (the file
itself: shallow).
"""

from __future__ import annotations

import pygit2

from rewindfs.store.history import gitkeep
from rewindfs.store.history.chain import is_pre_rollback, length, recorded_chain, walk
from rewindfs.store.history.labels import labels_by_commit
from rewindfs.store.history.shallow import add_boundaries
from rewindfs.store.history.trailers import parse_message
from rewindfs.store.objects.layout import Layout

PRE_ROLLBACK_KEPT = 10  # newest pre-rollback snapshots that do not count against the cap


def enforce_max_snapshots(repo: pygit2.Repository, layout: Layout, h16: str, keep: int) -> int:
    """Keep the newest `keep` checkpoints of project `h16`; returns how many went.

    Labelled checkpoints are kept on top of `keep`, and so are the newest
    PRE_ROLLBACK_KEPT pre-rollback snapshots: restores and undos must not push a
    person's own checkpoints out. Older pre-rollback snapshots count like any other,
    so a long run of restores still cannot grow the history without bound. A chain no
    longer than `keep` is told by the records' summary (store.history.records.listpage: the
    checkpoints taken since it, added to its count), read no further; else the chain
    is read from the history records, else from the commits.
    """
    known = length(repo, h16)
    if known is not None and known <= keep:
        return 0  # the cap counts at most every checkpoint of the chain
    recorded = recorded_chain(repo, h16)
    if recorded is not None:
        chain = [(r.id, is_pre_rollback(r.reason, r.trailers)) for r in recorded]
    else:
        chain = [(str(c.id), is_pre_rollback(*parse_message(c.message)))
                 for c in walk(repo, Layout.project_ref(h16))]
    labelled = labels_by_commit(repo, h16)
    position = _oldest_kept(chain, labelled, keep)
    if position is None:
        return 0
    beyond = [oid for oid, _ in chain[position + 1:]]
    pinned = {oid for oid in beyond if oid in labelled}
    if len(pinned) == len(beyond):
        return 0
    add_boundaries(repo, layout, {chain[position][0]} | pinned)
    gitkeep.rebuild(repo, h16)  # the repository states only the dropped ones named go too
    return len(beyond) - len(pinned)


def _oldest_kept(chain: list[tuple[str, bool]], labelled: dict, keep: int) -> int | None:
    """Index in `chain` ((id, pre-rollback) newest first) of the oldest checkpoint the cap
    keeps; None when the cap keeps them all."""
    free = PRE_ROLLBACK_KEPT
    counted = 0
    for position, (oid, pre_rollback) in enumerate(chain):
        if oid in labelled:
            continue
        if free and pre_rollback:
            free -= 1
            continue
        counted += 1
        if counted == keep:
            return position
    return None
