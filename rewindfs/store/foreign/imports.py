"""Another agent's snapshots as ordinary checkpoints of the shared store, kept by labels.

Each imported snapshot is a commit of its tree (copied in, see store.foreign.copy)
named by a label (`refs/rewind/labels/<h16>/<label>`). Labels are what keeps them:
git gc never drops a labelled commit, pruning by count or size never counts one,
and `rewind list`, the mount and restore treat them as any labelled checkpoint.
They stay off the project's own chain (`refs/hermes/<h16>`), so Hermes and the
numbering of the project's own checkpoints are as before. The commits of one
session are chained oldest first, so each lists its changes against the step
before it.

Idempotent: a label already there is kept as it is (and serves as the parent of
the next one); only missing ones are written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from rewindfs.errors import StoreError
from rewindfs.store.foreign.copy import copy_trees
from rewindfs.store.foreign.objects import ForeignObjects
from rewindfs.store.history import projects
from rewindfs.store.history.chain import STATS_TRAILER, TIME_TRAILER
from rewindfs.store.history.files.treestats import tree_stats
from rewindfs.store.history.labels import set_label, validate_label
from rewindfs.store.history.snapshot import locked
from rewindfs.store.history.trailers import compose_message
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.repo import Store


@dataclass(frozen=True)
class Snapshot:
    """One snapshot to keep: its tree (in the agent's repository) and how to name it."""

    tree: str
    label: str
    reason: str
    time: float  # when the agent took it
    chain: str  # snapshots with the same chain (a session) are parented in order
    trailers: dict[str, str] = field(default_factory=dict)
    subtree: bytes = b""  # the project's folder inside the agent's tree (b"": all of it)


@dataclass
class Imported:
    created: list[tuple[str, str]] = field(default_factory=list)  # (label, commit)
    kept: list[str] = field(default_factory=list)  # labels that were there already
    gone: dict[str, str] = field(default_factory=dict)  # label -> why it could not be kept
    objects: int = 0
    bytes: int = 0


def keep(store: Store, workdir: Path, source: ForeignObjects,
         snapshots: list[Snapshot]) -> Imported:
    """Make each snapshot a labelled checkpoint of the project at `workdir` (oldest first
    within each chain)."""
    out = Imported()
    for snap in snapshots:
        validate_label(snap.label)
    with locked(store, workdir) as project:
        repo = store.repo
        h16 = project.h16
        existing = {s.label: _label_target(repo, h16, s.label) for s in snapshots}
        wanted = [s for s in snapshots if existing[s.label] is None]
        copied = copy_trees(store, source, [s.tree for s in wanted])
        out.objects, out.bytes = copied.objects, copied.bytes
        last: dict[str, str] = {}  # chain -> its newest commit so far
        for snap in sorted(snapshots, key=lambda s: (s.chain, s.time)):
            commit = existing[snap.label]
            if commit is not None:
                out.kept.append(snap.label)
                last[snap.chain] = commit
                continue
            if snap.tree in copied.gone:
                out.gone[snap.label] = copied.gone[snap.tree]
                continue
            tree = _subtree(repo, snap.tree, snap.subtree)
            if tree is None:
                out.gone[snap.label] = f"{snap.subtree.decode(errors='replace')} is not in it"
                continue
            commit = _commit(repo, snap, tree, last.get(snap.chain))
            set_label(store, h16, snap.label, commit)
            out.created.append((snap.label, commit))
            last[snap.chain] = commit
        if out.created:
            projects.touch(store.layout, h16, project.workdir)
    return out


def _label_target(repo: pygit2.Repository, h16: str, label: str) -> str | None:
    ref = repo.references.get(Layout.label_ref(h16, label))
    return str(ref.target) if ref is not None else None


def _subtree(repo: pygit2.Repository, tree: str, path: bytes) -> str | None:
    if not path:
        return tree
    try:
        item = repo[tree][path.decode("utf-8", "surrogateescape")]
    except KeyError:
        return None
    return str(item.id) if item.type_str == "tree" else None


def _commit(repo: pygit2.Repository, snap: Snapshot, tree: str, parent: str | None) -> str:
    parent_tree = str(repo[parent].peel(pygit2.Commit).tree_id) if parent else None
    change = tree_stats(repo, parent_tree, tree)
    message = compose_message(snap.reason, {**snap.trailers, STATS_TRAILER: change.encode(),
                                            TIME_TRAILER: f"{snap.time:.6f}"})
    when = int(snap.time)
    offset = int((time.mktime(time.localtime(when)) - time.mktime(time.gmtime(when))) // 60)
    sig = pygit2.Signature("rewindfs", "rewindfs@local", when, offset)
    try:
        oid = repo.create_commit(None, sig, sig, message, pygit2.Oid(hex=tree),
                                 [pygit2.Oid(hex=parent)] if parent else [])
    except pygit2.GitError as exc:
        raise StoreError(f"could not record imported snapshot: {exc}") from exc
    return str(oid)
