"""A project's checkpoints, a reference resolved and a file read, without libgit2
(store.objects.rawodb): the CLI's quick paths for `rewind list` and `rewind cat`, whose
start-up cannot afford importing pygit2.

Decided exactly as store.history.chain and store.history.references decide (their model
is store.history.checkpoint). Only successes are answered here: an error to report (an
unknown reference, a missing file), a Hermes checkpoint without recorded stats, a damaged
or unexpected object, a parent that cannot be read (a history broken in the middle, which
the libgit2 path numbers down to and lists past: store.history.breaks), a label ref that
cannot be parsed: all raise `Unsure`, and the caller takes the libgit2 path, which says
what is wrong in its own words.

A listing reads the history records the libgit2 path keeps (store.history.recordfile)
from the tip only as far as it is shown (`page`, store.history.listpage), each record
checked against its object file as the libgit2 path checks it, a commit without one
read from the objects. Without a usable chain summary in them, `checkpoints` walks the
commits themselves and writes one (`remember`), so the next listing pages.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rewindfs.errors import RewindError
from rewindfs.store.history import listpage, recordfile, recordtail
from rewindfs.store.history.checkpoint import (
    STATS_TRAILER,
    Checkpoint,
    Stats,
    checked,
    choose,
    make,
    number,
)
from rewindfs.store.history.recordfile import Record
from rewindfs.store.history.trailers import parse_message
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.packs import pack_files
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


def checkpoints(odb: RawOdb, h16: str, *, summarize: bool = False) -> list[Checkpoint]:
    """store.history.chain.checkpoints: the chain behind the project's ref, newest first,
    down to the prune boundary, then labelled checkpoints pruned out of it; numbered.
    `summarize`: a long chain's summary is written into the records (`page` reads it)."""
    labels = odb.labels(h16)
    shallow = recordfile.shallow_key(odb.store)
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
    found = number([make(c.id, c.tree, c.parents, c.time, c.offset, c.message, stop,
                         labels.get(c.id, []), records_parent=bool(c.parents))
                    for c in [*chain, *pinned]])
    if summarize and len(chain) > listpage.SUMMARY_EVERY:
        _remember(odb, h16, found[:len(chain)], shallow, stop, labels)
    return found


def page(odb: RawOdb, h16: str) -> listpage.Page | None:
    """store.history.chain.page: the project's checkpoints read from the tip as far as they
    are shown, from the history records; None when they cannot tell (no usable summary,
    packs changed since: `checkpoints` walks the commits). Unsure as `checkpoints` is."""
    shallow = recordfile.shallow_key(odb.store)
    stop = odb.boundaries()
    labels = odb.labels(h16)
    tip = odb.ref(Layout.project_ref(h16))
    tail = recordtail.Tail(recordfile.cache_path(odb.store, h16))
    if tip is None or not tail.ok:
        return None
    known, packs = tail.summary()
    now = pack_files(odb.objects)
    if known is None or any(now.get(name) != stat for name, stat in packs.items()):
        return None
    fetch = _Recorded(odb, tail).get
    found = listpage.from_tip(tip, stop, fetch, known, shallow, list(labels))
    if found is None:
        return None
    walked, summary, whole = found
    pinned = listpage.pinned_records(labels, summary, walked, fetch)
    if pinned is None:
        return None
    if whole or len(walked) >= listpage.SUMMARY_EVERY:
        summary.packs = packs
        recordfile.append(tail.path, [summary.line()])
    return listpage.Page(summary, walked, fetch, stop, labels, pinned, odb.has)


def drop_records(store: Path, h16: str) -> None:
    """Remove the project's records (they misled a listing: the next one walks the
    objects; the libgit2 path writes them again)."""
    try:
        os.unlink(recordfile.cache_path(store, h16))
    except OSError:
        pass


def _remember(odb: RawOdb, h16: str, chain: list[Checkpoint], shallow: list[int],
              stop: frozenset[str], labels: dict[str, list[str]]) -> None:
    """Write the summary of `chain` (read under `shallow`, `stop`) into the project's
    records, for the next listing to page (only into a records file of this version:
    the libgit2 path writes the records themselves)."""
    tail = recordtail.Tail(recordfile.cache_path(odb.store, h16))
    if not chain or not tail.ok or recordfile.shallow_key(odb.store) != shallow \
            or odb.boundaries() != stop:
        return
    summary = listpage.summarize(chain, shallow, list(labels))
    summary.packs = tail.packs()
    recordfile.append(tail.path, [summary.line()])


class _Recorded:
    """Records looked up from the end of the file, each checked against its commit's
    object file (store.history.records.Recall's check); a commit without a usable
    record read from the objects."""

    def __init__(self, odb: RawOdb, tail: recordtail.Tail):
        self.odb, self.tail = odb, tail

    def get(self, commit_id: str, newer: bool = False) -> Record:
        record = self.tail.get(commit_id, newer)
        if record is not None:
            if record.where and not recordfile.loose_unchanged(self.odb.objects, record):
                self.odb.read_kind(commit_id, COMMIT)  # the record stands if it reads
            return record
        found = commit(self.odb, commit_id)
        reason, trailers = parse_message(found.message)
        return Record(found.id, found.tree, found.parents[0] if found.parents else None,
                      found.time, found.offset, found.commit_time, reason, trailers, None,
                      None, None, [])


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
    if parsed is None and checkpoint.record is not None and checkpoint.record.stats is not None:
        return Stats(*checkpoint.record.stats)  # the libgit2 path computed them
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
