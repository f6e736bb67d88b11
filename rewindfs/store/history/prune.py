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
# The trailers of an agent hook's checkpoint (hooks.checkpoint, agent.stepbegin): which
# agent, session and turn (a person's prompt) it was taken in.
HOOK_TURN_TRAILERS = ("Rewind-Agent", "Rewind-Session", "Rewind-Turn")


def enforce_max_snapshots(repo: pygit2.Repository, layout: Layout, h16: str, keep: int) -> int:
    """Keep the newest `keep` checkpoints of project `h16`; returns how many went.

    An agent hook's checkpoints count by turn, as people count what they can go back to:
    the hooks checkpoint before every command not known to be harmless, so one prompt
    may make dozens, and counting those one by one would leave only the last turn or
    two. All the checkpoints of one turn count as one, so the state before each of the
    newest `keep` turns stays restorable: the history is cut below the oldest checkpoint
    of the `keep`-th turn and one more (the state before that turn, when its first
    command found nothing changed and took none). Pruning never rewrites history (the
    cut is the `shallow` boundary), so a turn is kept or dropped whole. Every other
    checkpoint (the Python API's, Hermes's, the CLI's) counts one, as in Hermes.

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
        chain = [(r.id, is_pre_rollback(r.reason, r.trailers), _turn(r.trailers))
                 for r in recorded]
    else:
        chain = []
        for c in walk(repo, Layout.project_ref(h16)):
            reason, trailers = parse_message(c.message)
            chain.append((str(c.id), is_pre_rollback(reason, trailers), _turn(trailers)))
    labelled = labels_by_commit(repo, h16)
    position = _oldest_kept(chain, labelled, keep)
    if position is None:
        return 0
    beyond = [oid for oid, _, _ in chain[position + 1:]]
    pinned = {oid for oid in beyond if oid in labelled}
    if len(pinned) == len(beyond):
        return 0
    add_boundaries(repo, layout, {chain[position][0]} | pinned)
    gitkeep.rebuild(repo, h16)  # the repository states only the dropped ones named go too
    return len(beyond) - len(pinned)


def _turn(trailers: dict[str, str]) -> tuple[str, ...] | None:
    """The agent hook's turn a checkpoint was taken in; None for any other checkpoint."""
    key = tuple(trailers.get(name, "") for name in HOOK_TURN_TRAILERS)
    return key if key[0] and key[2] else None


def _oldest_kept(chain: list[tuple[str, bool, tuple[str, ...] | None]], labelled: dict,
                 keep: int) -> int | None:
    """Index in `chain` ((id, pre-rollback, hook turn) newest first) of the oldest
    checkpoint the cap keeps; None when the cap keeps them all. A run of checkpoints of
    one hook turn counts once; past the `keep`-th, when it is such a run, one more is
    kept (the state before the turn)."""
    free = PRE_ROLLBACK_KEPT
    counted = 0
    previous = None
    cut: int | None = None
    for position, (oid, pre_rollback, turn) in enumerate(chain):
        if oid in labelled:
            continue
        if free and pre_rollback:
            free -= 1
            continue
        if cut is not None:   # past the keep-th unit, which is a hook turn
            if turn == previous:
                cut = position    # its older checkpoints stay with it
                continue
            return position       # and the one before it: the state before the turn
        if turn is None or turn != previous:
            counted += 1
        previous = turn
        if counted == keep:
            if turn is None:
                return position
            cut = position
    return cut
