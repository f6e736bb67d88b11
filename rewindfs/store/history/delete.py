"""Deleting one checkpoint from a project's history.

History is a chain (each checkpoint's parent is the one before), so what deleting
costs depends on where the checkpoint sits:
- the newest: the project ref moves back to its parent; no other id changes;
- the oldest kept: it becomes a prune boundary's parent (see store.history.prune); no id
  changes;
- a labelled checkpoint already pruned out of the chain: its labels go;
- one in the middle: every newer checkpoint is recreated on top of its parent
  (same files, reason, times and metadata), so their ids change. That is the only
  way to take its files out of the history, and `ids_changed` says so; labels
  and notes follow the new ids.
Everything runs under the project lock; the ref moves compare-and-swap, so a
concurrent Hermes checkpoint is never lost (the deletion then asks to be re-run).
External actions the deleted checkpoint carried go back to the pending list, so
restores keep warning about them. The objects stay until git gc reclaims them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pygit2

from rewindfs.errors import Busy, Refused
from rewindfs.store.history import gitkeep, refupdate
from rewindfs.store.history.chain import STATS_TRAILER, Checkpoint, walk
from rewindfs.store.history.files.treestats import tree_stats
from rewindfs.store.history.labels import labels_by_commit
from rewindfs.store.history.metadata import actions as actions_mod
from rewindfs.store.history.metadata import notes
from rewindfs.store.history.metadata.meta import CheckpointMeta
from rewindfs.store.history.shallow import add_boundaries
from rewindfs.store.history.trailers import compose_message, parse_message
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock

NEWEST, OLDEST, PINNED, MIDDLE = "newest", "oldest", "pinned", "middle"


@dataclass
class Deleted:
    checkpoint: str
    position: str  # newest, oldest, pinned or middle
    labels_removed: list[str] = field(default_factory=list)
    ids_changed: dict[str, str] = field(default_factory=dict)  # old id -> new id


def plan_position(repo: pygit2.Repository, h16: str, checkpoint: Checkpoint) -> tuple[str, int]:
    """Where the checkpoint sits, and how many newer checkpoints a deletion would rewrite."""
    chain = [str(c.id) for c in walk(repo, Layout.project_ref(h16))]
    if checkpoint.id not in chain:
        return PINNED, 0
    at = chain.index(checkpoint.id)
    if at == 0:
        return NEWEST, 0
    if at == len(chain) - 1:
        return OLDEST, 0
    return MIDDLE, at


def delete(repo: pygit2.Repository, layout: Layout, h16: str, checkpoint: Checkpoint,
           expect: tuple[str, int] | None = None) -> Deleted:
    """`expect`: the plan_position a person confirmed; a deletion that would now do
    otherwise (a checkpoint came after it: other ids would change) is refused."""
    with file_lock(layout.lock_file(h16)):
        position, newer = plan_position(repo, h16, checkpoint)
        if expect is not None and (position, newer) != expect:
            raise Refused("the project's history changed since the question (a checkpoint "
                          "came after it), so deleting would now do otherwise; nothing was "
                          "deleted: run the command again")
        chain = walk(repo, Layout.project_ref(h16))
        ids = [str(c.id) for c in chain]
        done = Deleted(checkpoint.id, position)
        carried = CheckpointMeta.from_json(notes.read(repo, h16, checkpoint.id)).actions
        if position == NEWEST:
            _move_ref(repo, h16, ids[0], ids[1] if len(ids) > 1 else None)
        elif position == OLDEST:
            add_boundaries(repo, layout, {ids[-2]})
        elif position == MIDDLE:
            done.ids_changed = _rewrite_newer(repo, h16, chain, ids.index(checkpoint.id))
        done.labels_removed = _drop_labels(repo, h16, checkpoint.id)
        _move_labels(repo, h16, done.ids_changed)
        if done.ids_changed:
            notes.rekey(repo, h16, done.ids_changed)
        for action in carried:  # restores before it must keep warning about them
            actions_mod.record(layout, h16, action)
        gitkeep.rebuild(repo, h16)  # its repository state goes unless another names it
        return done


def _move_ref(repo: pygit2.Repository, h16: str, expected: str, new: str | None) -> None:
    name = Layout.project_ref(h16)
    ref = repo.references.get(name)
    if ref is None or str(ref.target) != expected:
        raise Busy("the project got a new checkpoint meanwhile; run the command again")
    if refupdate.swap(repo, name, ref, None if new is None else pygit2.Oid(hex=new),
                      "rewind delete") is not None:
        raise Busy("the project got a new checkpoint meanwhile; run the command again")


def _rewrite_newer(repo: pygit2.Repository, h16: str, chain: list[pygit2.Commit], at: int
                   ) -> dict[str, str]:
    """Recreate chain[at-1] ... chain[0] (oldest first) on top of chain[at]'s parent."""
    parent = chain[at + 1]
    renamed: dict[str, str] = {}
    for commit in reversed(chain[:at]):
        message = commit.message
        if commit.parent_ids and str(commit.parent_ids[0]) == str(chain[at].id):
            # its recorded change was against the deleted checkpoint: count it again
            reason, trailers = parse_message(message)
            if STATS_TRAILER in trailers:
                stats = tree_stats(repo, str(parent.tree_id), str(commit.tree_id))
                trailers[STATS_TRAILER] = stats.encode()
                message = compose_message(reason, trailers)
        new = repo.create_commit(None, commit.author, commit.committer, message,
                                 commit.tree_id, [parent.id])
        renamed[str(commit.id)] = str(new)
        parent = repo[new]
    _move_ref(repo, h16, str(chain[0].id), str(parent.id))
    return renamed


def _drop_labels(repo: pygit2.Repository, h16: str, commit: str) -> list[str]:
    gone = labels_by_commit(repo, h16).get(commit, [])
    for label in gone:
        ref = repo.references.get(Layout.label_ref(h16, label))
        if ref is not None:
            ref.delete()
    return sorted(gone)


def _move_labels(repo: pygit2.Repository, h16: str, renamed: dict[str, str]) -> None:
    for commit, labels in labels_by_commit(repo, h16).items():
        if commit in renamed:
            for label in labels:
                repo.references.create(Layout.label_ref(h16, label),
                                       pygit2.Oid(hex=renamed[commit]), force=True)
