"""A project's checkpoints read from the tip only as far as they are shown, as `git log` pages:
the first screen of `rewind list` costs what its rows cost, whatever the history's length.

The history records (store.history.records.recordfile) hold chain summaries: walking from a tip
under a prune boundary found so many checkpoints, so many numbered, the oldest time, the
last one, which labelled ones. A reader walks from the live tip down to the newest
summary's tip (the checkpoints taken since), adds what it walked to the summary, and
then reads each further record only when its row is printed. Numbers count from the
tip, so a row's number is known when it is reached; the number column's width comes
from the summary's count. Without a usable summary (none yet, another boundary since a
prune, other labels, a tip that moved back) the caller walks the whole chain once, the
way it always has, and writes one (`summarize`). No libgit2 here: store.history.chain
passes its reader of records (`fetch`: a record checked against the objects, None when
its commit cannot be read).

A record read for a row past the first screen that does not agree with the summary (its
commit no longer reads: damage since the summary was written) raises `Surprise`: rows
already printed stay, and the caller drops the records so the next read walks the objects
and says what is wrong the one way it always does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from rewindfs.store.history.checkpoint import Checkpoint, pinned_order
from rewindfs.store.history.records.recordfile import Record, Summary

MAX_WALK = 256  # checkpoints walked from the tip to a summary before the whole chain is
SUMMARY_EVERY = 32  # checkpoints taken since the newest summary before another is written
# Rows read one by one before the rest are read from the whole records file: past what
# a reader who stops after one screen still gets made (the CLI makes rows in chunks of
# 60, 60, 120, ... and sees the reader gone only between chunks: cli.output.rowstream),
# so `rewind list | head` and a pager quit after a screen never parse the whole file.
WIDEN_AT = 240

# fetch(commit_id, newer=False): `newer`, a commit taken since the summary the reader holds
# (its record, if any, was written after that summary: looked for there only)
Fetch = Callable[..., "Record | None"]


class Surprise(Exception):
    """The chain past the first screen does not read as its summary says."""


def summarize(chain: Sequence[Record | Checkpoint], shallow: list[int],
              labels: list[str] | None) -> Summary:
    """The summary of `chain` (newest first, whole: records, or checkpoints read from
    their commits) under `shallow`; `labels`: the labelled commit ids to say the chain's
    membership of (None: not asked)."""
    wanted = set(labels or ())
    last = chain[-1]
    return Summary(tip=chain[0].id, shallow=shallow, count=len(chain),
                   numbered=sum(not r.pre_rollback for r in chain),
                   oldest=min(r.time for r in chain), bottom=last.id,
                   root=last.root if isinstance(last, Checkpoint) else last.parent is None,
                   labels=None if labels is None else sorted(wanted),
                   in_chain={r.id: r.pre_rollback for r in chain if r.id in wanted}, packs={})


def from_tip(tip: str, stop: frozenset[str], fetch: Fetch, known: Summary | None,
             shallow: list[int], labels: list[str] | None
             ) -> tuple[list[Record], Summary, bool] | None:
    """(the records from `tip` down to the summary's tip, the summary for `tip`, whether
    they are the whole chain), walking at most MAX_WALK; None when the whole chain must be
    walked (no usable summary within reach, or a commit that cannot be read). `labels`:
    the labelled commit ids now (None: their membership is not needed)."""
    wanted = None if labels is None else sorted(set(labels))
    usable = known is not None and known.shallow == shallow \
        and (wanted is None or known.labels == wanted)
    walked: list[Record] = []
    seen: set[str] = set()
    current = tip
    while True:
        if usable and current == known.tip:  # type: ignore[union-attr]
            return walked, _extended(known, walked), False  # type: ignore[arg-type]
        if current in seen or len(walked) >= MAX_WALK:
            return None
        record = fetch(current, usable)
        if record is None:
            return None
        walked.append(record)
        seen.add(current)
        if current in stop or record.parent is None:
            return walked, summarize(walked, shallow, wanted), True
        current = record.parent


def _extended(known: Summary, walked: list[Record]) -> Summary:
    if not walked:
        return known
    labelled = set(known.labels or ())
    return Summary(tip=walked[0].id, shallow=known.shallow, count=known.count + len(walked),
                   numbered=known.numbered + sum(not r.pre_rollback for r in walked),
                   oldest=min(known.oldest, *(r.time for r in walked)), bottom=known.bottom,
                   root=known.root,
                   labels=known.labels,
                   in_chain={**known.in_chain,
                             **{r.id: r.pre_rollback for r in walked if r.id in labelled}},
                   packs=known.packs)


@dataclass
class Page:
    """A project's checkpoints, newest first: the chain (`summary`, read on demand from
    `walked` and then `fetch`), then `pinned`, labelled ones pruned out of it."""

    summary: Summary
    walked: list[Record]
    fetch: Fetch
    stop: frozenset[str]
    labels: dict[str, list[str]]
    pinned: list[Record]
    exists: Callable[[str], bool]  # whether an object is stored (a parent after gc)
    # Called once the reader goes past the first screen: the rest is wanted (the records
    # reader then parses the whole file at once: records.Recall.widen).
    widen: Callable[[], None] | None = None
    _made: list[Checkpoint] = field(default_factory=list)
    _rows: Iterator[Checkpoint] | None = None

    @property
    def rows(self) -> int:
        return self.summary.count + len(self.pinned)

    @property
    def numbered(self) -> int:
        """How many rows are numbered (the last one's number)."""
        labelled_pre = sum(pre for oid, pre in self.summary.in_chain.items()
                           if oid in self.labels)
        return self.summary.numbered + labelled_pre + len(self.pinned)

    @property
    def oldest(self) -> int:
        return min([self.summary.oldest, *(r.time for r in self.pinned)])

    def head(self, n: int) -> list[Checkpoint]:
        """The first `n` rows (fewer when there are fewer)."""
        if self._rows is None:
            self._rows = self._checkpoints()
        while len(self._made) < n:
            made = next(self._rows, None)
            if made is None:
                break
            self._made.append(made)
        return self._made[:n]

    def __iter__(self) -> Iterator[Checkpoint]:
        yield from self.head(len(self._made))
        if self._rows is None:
            self._rows = self._checkpoints()
        yield from self._rows

    def _checkpoints(self) -> Iterator[Checkpoint]:
        count = 0
        for record, edge in self._records():
            cp = self._checkpoint(record, edge)
            if not cp.pre_rollback or cp.labels:
                count += 1
                cp.number = count
            yield cp

    def _records(self) -> Iterator[tuple[Record, bool]]:
        bottom = self.summary.bottom
        seen = 0
        current: str | None = None
        for record in self.walked:
            seen += 1
            current = record.parent
            yield record, record.id == bottom
            if record.id == bottom:
                break
        else:
            current = self.summary.tip if not self.walked else current
            while seen < self.summary.count:
                if seen == WIDEN_AT and self.widen is not None:
                    self.widen()
                record = self.fetch(current) if current is not None else None
                if record is None:
                    raise Surprise(f"checkpoint {str(current)[:8]} cannot be read")
                seen += 1
                is_bottom = record.id == bottom
                if is_bottom != (seen == self.summary.count):
                    raise Surprise("the chain is not the one its summary describes")
                yield record, is_bottom
                current = record.parent
        for record in self.pinned:
            yield record, True

    def _checkpoint(self, record: Record, edge: bool) -> Checkpoint:
        # The oldest of the chain and pinned ones may have lost their parent to gc since
        # they were recorded: then they count as parentless (store.history.chain).
        kept = not edge or record.parent is None or self.exists(record.parent)
        return Checkpoint(
            number=0, id=record.id, time=record.time, offset=record.offset,
            reason=record.reason, trailers=record.trailers, tree_id=record.tree,
            parent_id=record.parent if record.id not in self.stop else None,
            labels=sorted(self.labels.get(record.id, [])), root=record.parent is None,
            record=record if kept else None)


def pinned_records(labels: dict[str, list[str]], summary: Summary, walked: list[Record],
                   fetch: Fetch) -> list[Record] | None:
    """The labelled checkpoints outside the chain, newest commit first; None when one
    cannot be read (the objects say why)."""
    in_chain = set(summary.in_chain) | {r.id for r in walked}
    out = []
    for oid in labels:
        if oid not in in_chain:
            record = fetch(oid)
            if record is None:
                return None
            out.append(record)
    out.sort(key=lambda r: pinned_order(r.commit_time, r.id))
    return out
