"""A project's checkpoints, a reference resolved and a file read, without libgit2
(store.objects.rawodb): the CLI's quick paths for `rewind list` and `rewind cat`, whose
start-up cannot afford importing pygit2.

Decided exactly as store.history.chain and store.history.references decide (their model
is store.history.checkpoint). Only successes are answered here: an error to report (an
unknown reference, a missing file), a Hermes checkpoint without recorded stats, a damaged
or unexpected object, a parent that cannot be read (a history broken in the middle, which
the libgit2 path numbers down to and lists past: store.history.breaks), a label ref that
cannot be parsed: all raise `Unsure`, and the caller takes the libgit2 path, which says
what is wrong in its own words. The chain is walked through the objects themselves, not
the history records (store.history.records) the libgit2 path reads: the records only
ever say what the objects say, and checking them against the object files would cost
what reading the commits costs here (2,000 packed checkpoints: ~0.1 s, half the libgit2
path's whole command).
"""

from __future__ import annotations

import json
import os

from rewindfs.errors import RewindError
from rewindfs.store.history.checkpoint import (
    STATS_TRAILER,
    Checkpoint,
    Stats,
    checked,
    choose,
    make,
    number,
)
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.rawodb import BLOB, COMMIT, TREE, RawOdb, Unsure

GITLINK, DIRECTORY = 0o160000, 0o040000


class Commit:
    """The fields of a commit object that make a checkpoint."""

    def __init__(self, oid: str, body: bytes):
        head, sep, message = body.partition(b"\n\n")
        if not sep:
            head, message = body, b""
        self.id = oid
        self.parents: list[str] = []
        tree = author = committer = None
        for line in head.split(b"\n"):
            key, _, value = line.partition(b" ")
            if key == b"tree":
                tree = value.decode("ascii")
            elif key == b"parent":
                self.parents.append(value.decode("ascii"))
            elif key == b"author":
                author = value
            elif key == b"committer":
                committer = value
            elif key == b"encoding" and value.lower() not in (b"utf-8", b"utf8"):
                raise Unsure(f"commit {oid} is not UTF-8")
        if tree is None or author is None or committer is None:
            raise Unsure(f"commit {oid} is malformed")
        self.tree = tree
        self.time, self.offset = _when(author)
        self.commit_time, _ = _when(committer)
        self.message = message.decode("utf-8", "replace")


def _when(signature: bytes) -> tuple[int, int]:
    """(epoch seconds, minutes east of UTC) from `Name <mail> 1700000000 +0130`."""
    try:
        when, zone = signature.rsplit(b"> ", 1)[1].split()
        minutes = int(zone[1:3]) * 60 + int(zone[3:5])
        return int(when), -minutes if zone[:1] == b"-" else minutes
    except (IndexError, ValueError):
        raise Unsure("malformed signature") from None


def commit(odb: RawOdb, oid: str) -> Commit:
    return Commit(oid, odb.read_kind(oid, COMMIT))


def checkpoints(odb: RawOdb, h16: str) -> list[Checkpoint]:
    """store.history.chain.checkpoints: the chain behind the project's ref, newest first,
    down to the prune boundary, then labelled checkpoints pruned out of it; numbered."""
    labels = odb.labels(h16)
    stop = odb.boundaries()
    chain: list[Commit] = []
    tip = odb.ref(Layout.project_ref(h16))
    seen: set[str] = set()
    while tip is not None and tip not in seen:
        current = commit(odb, tip)
        chain.append(current)
        seen.add(tip)
        if tip in stop or not current.parents:
            break
        tip = current.parents[0]
    pinned = sorted((commit(odb, oid) for oid in labels if oid not in seen),
                    key=lambda c: -c.commit_time)
    return number([make(c.id, c.tree, c.parents, c.time, c.offset, c.message, stop,
                        labels.get(c.id, []), records_parent=bool(c.parents))
                   for c in [*chain, *pinned]])


def resolve(odb: RawOdb, h16: str, reference: str) -> Checkpoint:
    """store.history.references.resolve, for a reference that names a checkpoint."""
    try:
        text = checked(reference)
        return choose(checkpoints(odb, h16), text, _unsure, lambda: _unsure(text))
    except RewindError as exc:
        raise Unsure(str(exc)) from None


def _unsure(_text: str) -> bool:
    raise Unsure("a reference to look up with libgit2")


def stats(checkpoint: Checkpoint) -> Stats:
    """The change stats the checkpoint records (store.history.changestats.stats computes
    them for one that does not: a Hermes checkpoint)."""
    recorded = checkpoint.trailers.get(STATS_TRAILER)
    parsed = Stats.decode(recorded) if recorded else None
    if parsed is None:
        raise Unsure(f"checkpoint {checkpoint.short} records no stats")
    return parsed


def cached_size(layout: Layout, h16: str, commit_id: str) -> int | None:
    """Bytes of every file in checkpoint `commit_id`, if store.history.changestats has
    cached them; None otherwise."""
    try:
        known = json.loads(layout.sizes_cache(h16).read_text())
    except (OSError, ValueError):
        return None
    value = known.get(commit_id) if isinstance(known, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_file(odb: RawOdb, checkpoint: Checkpoint, path: bytes) -> bytes:
    """store.history.pathlog.read_file: the bytes of the file (or a symlink's target)
    at `path` in the checkpoint."""
    oid, mode = checkpoint.tree_id, DIRECTORY
    for name in path.split(b"/"):
        if mode != DIRECTORY:
            raise Unsure(f"{os.fsdecode(path)!r} is not in the checkpoint")
        oid, mode = tree_entry(odb.read_kind(oid, TREE), name)
    if mode in (DIRECTORY, GITLINK):
        raise Unsure(f"{os.fsdecode(path)!r} is not a file in the checkpoint")
    return odb.read_kind(oid, BLOB)


def tree_entry(tree: bytes, wanted: bytes) -> tuple[str, int]:
    """(object id, mode) of entry `wanted` of a tree object's body."""
    at = 0
    while at < len(tree):
        space = tree.index(b" ", at)
        nul = tree.index(b"\0", space)
        if tree[space + 1: nul] == wanted:
            return tree[nul + 1: nul + 21].hex(), int(tree[at:space], 8)
        at = nul + 21
    raise Unsure(f"no entry {os.fsdecode(wanted)!r}")
