"""What a checkpoint is, how checkpoints are numbered, and which one a reference a person
types names: the model behind store.history.chain and store.history.references (what
they read through libgit2 and the history records, decided here once).

Numbering (`number`, the one place it is decided; `rewind list` and the mount both use
it): 1 is the newest checkpoint. Pre-rollback snapshots (what a restore, undo or revert
saves first) are listed but not numbered (number 0), so a number a person just used
still names the same checkpoint after a restore: only a new checkpoint shifts the
numbers. Every checkpoint also has a stable id, its commit hash. A history broken in the
middle (store.history.breaks) is numbered down to the break only; what is recovered past
it has no number (`past_break`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from rewindfs.errors import InvalidInput, NotFound
from rewindfs.store.history import timeref
from rewindfs.store.history.trailers import (  # noqa: F401 - the trailer names, offered here too
    PRE_ROLLBACK_SUBJECT,
    RESTORE_TARGET_TRAILER,
    STATS_TRAILER,
    TIME_TRAILER,
    parse_message,
)

# Typed as Any below, not by name: records and breaks use libgit2, which this model must
# not import (even for a type checker's sake, the layout rules would see a circle).

_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")


@dataclass
class Checkpoint:
    number: int  # 1 = newest
    id: str
    time: int  # epoch seconds
    offset: int  # minutes east of UTC, as recorded
    reason: str
    trailers: dict[str, str]
    tree_id: str
    parent_id: str | None
    labels: list[str] = field(default_factory=list)
    root: bool = False  # the project's first checkpoint (no parent at all, not just pruned)
    past_break: bool = False  # recovered from past a break in the history (never numbered)
    # What its record says (stats, changed paths) when it was listed from the records and
    # its parent is still what the record was made against; None: ask the objects.
    record: Any = field(default=None, repr=False, compare=False)  # a records.Record
    clamped: int | None = field(default=None, repr=False, compare=False)  # see __post_init__

    def __post_init__(self) -> None:
        # git takes any time and offset in a commit (a remote's: year 318857, +9999),
        # datetime does not: times outside years 1970-9999 and offsets of a day or more
        # are clamped (`clamped`: the time as recorded), and chain.checkpoints says so.
        if not 0 <= self.time <= MAX_TIME:
            self.clamped = self.time
            self.time = clamp_time(self.time)
        if not -MAX_OFFSET < self.offset < MAX_OFFSET:
            self.clamped = self.time if self.clamped is None else self.clamped
            self.offset = 0

    @property
    def short(self) -> str:
        return self.id[:8]

    @property
    def pre_rollback(self) -> bool:
        return is_pre_rollback(self.reason, self.trailers)

    @property
    def precise_time(self) -> float:
        """Sub-second time recorded by rewindfs (commit times are whole seconds, too coarse
        to order a checkpoint against an agent write in the same second)."""
        try:
            return float(self.trailers[TIME_TRAILER])
        except (KeyError, ValueError):
            return float(self.time)

    @property
    def timestamp(self) -> str:
        """ISO 8601 with offset, as `git log --format=%aI` prints it (Hermes's field)."""
        tz = timezone(timedelta(minutes=self.offset))
        return datetime.fromtimestamp(self.time, tz).isoformat()


MAX_TIME = 253_402_128_000  # 9999-12-30 UTC: a local time of any offset is still year 9999
MAX_OFFSET = 24 * 60  # minutes


def clamp_time(when: int) -> int:
    """An epoch time datetime can show (1970 to 9999)."""
    return min(max(int(when), 0), MAX_TIME)


def year_of(when: int) -> int:
    """The year an epoch time falls in, however far (datetime stops at 9999)."""
    return 1970 + int(when // 31_556_952)


class History(list):
    """A project's checkpoints, newest first; `broken`: where its chain breaks (None: whole)."""

    broken: Any = None  # a store.history.breaks.Break


@dataclass
class Stats:
    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0

    def encode(self) -> str:
        return f"files={self.files_changed} insertions={self.insertions} deletions={self.deletions}"

    @classmethod
    def decode(cls, text: str) -> Stats | None:
        found = _DECODED.get(text, _UNSEEN)
        if found is _UNSEEN:
            try:
                fields = dict(part.split("=", 1) for part in text.split())
                found = int(fields["files"]), int(fields["insertions"]), int(fields["deletions"])
            except (KeyError, ValueError):
                found = None
            if len(_DECODED) < 4096:  # (a long listing repeats the same few texts)
                _DECODED[text] = found
        return None if found is None else cls(*found)


_UNSEEN = object()
_DECODED: dict[str, tuple[int, int, int] | None] = {}


@dataclass
class SnapshotResult:
    """What a checkpoint attempt did. `commit` is the new checkpoint, or the tip when skipped."""

    taken: bool
    commit: str | None
    project: str
    workdir: str
    reason: str
    tree: str | None = None  # the captured tree (what the working tree holds now)
    skipped_files: dict[str, list[str]] = field(default_factory=dict)
    adopted_from: str | None = None  # the moved project's old path, whose history continues
    sizes: dict[str, int] = field(default_factory=dict)  # of skipped files, when known
    grafted: bool = False  # captured from a watch's changed paths, not a walk of the tree

    @property
    def skipped(self) -> bool:
        return not self.taken


def is_pre_rollback(reason: str, trailers: dict[str, str]) -> bool:
    """Saved by a restore before it changed anything: rewindfs's trailer, or the subject
    Hermes gives its own pre-rollback snapshots."""
    return RESTORE_TARGET_TRAILER in trailers or reason.startswith(PRE_ROLLBACK_SUBJECT)


def make(commit: str, tree: str, parents: list[str], time: int, offset: int, message: str,
         stop: frozenset[str], labels: list[str], records_parent: bool) -> Checkpoint:
    """A commit as a checkpoint (number 0 until `number`); a commit in `stop` (a prune
    boundary) has no parent; `records_parent`: the commit object names one, even past
    a boundary (else it is the project's first checkpoint)."""
    reason, trailers = parse_message(message)
    parent = parents[0] if parents and commit not in stop else None
    return Checkpoint(number=0, id=commit, time=time, offset=offset, reason=reason,
                      trailers=trailers, tree_id=tree, parent_id=parent, labels=sorted(labels),
                      root=not records_parent)


def pinned_order(commit_time: int, commit_id: str) -> tuple[int, str]:
    """The sort key of labelled checkpoints pruned out of the chain: newest commit first,
    ties (taken within one second) by commit id, so every reader numbers them alike."""
    return -commit_time, commit_id


def number(history: list[Checkpoint]) -> list[Checkpoint]:
    """Numbers `history` (newest first) 1, 2, 3 ..., skipping pre-rollback snapshots (a
    broken history: only the part down to the break)."""
    count = 0
    for cp in history:
        if not cp.pre_rollback or cp.labels:  # a labelled one was chosen by a person
            count += 1
            cp.number = count
    return history


def checked(reference: str) -> str:
    text = (reference or "").strip()
    if not text:
        raise InvalidInput("empty checkpoint reference")
    if text.startswith("-"):
        raise InvalidInput(f"invalid checkpoint reference {text!r}")
    return text


def choose(history: list[Checkpoint], text: str, elsewhere: Callable[[str], bool],
           damaged_label: Callable[[], None]) -> Checkpoint:
    """The checkpoint of `history` that `text` names (store.history.references.resolve).

    `elsewhere(prefix)`: whether a hex prefix names a commit outside `history`;
    `damaged_label()` raises when `text` is a label whose checkpoint cannot be read. In a
    history broken in the middle (a History's `broken`), a number, `latest` or a time
    that would fall past the break is refused (a whole store might name another
    checkpoint there); labels and ids still resolve.
    """
    if not history:
        raise NotFound("this project has no checkpoints")
    numbered = [cp for cp in history if cp.number]
    broken = getattr(history, "broken", None)
    if text == "latest":
        if numbered:
            return numbered[0]
        if broken is not None:
            raise broken.refusal(text)
        return history[0]
    if text.isdigit() and 1 <= int(text) <= len(numbered):
        return numbered[int(text) - 1]
    for cp in history:
        if text in cp.labels:
            return cp
    if _HEX.match(text):
        lowered = text.lower()
        matches = [cp for cp in history if cp.id.startswith(lowered)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InvalidInput(f"checkpoint reference {text!r} is ambiguous; use more digits")
        if broken is not None and broken.missing.startswith(lowered):
            raise broken.damage  # the checkpoint the chain breaks at: damaged itself
        if elsewhere(lowered):
            raise NotFound(f"{text} is not a checkpoint of this project")
    if text.isdigit():
        if broken is not None and int(text) > len(numbered):
            raise broken.refusal(text)
        raise NotFound(f"no checkpoint {text}: this project has {len(numbered)}")
    damaged_label()
    when = timeref.parse(text)
    if when is not None:
        return _at_or_before(numbered, when, text, past=broken)
    raise NotFound(
        f"unknown checkpoint {text!r} (use a number from `rewind list`, a hash or a label)"
    )


def _at_or_before(numbered: list[Checkpoint], when: float, text: str,
                  past: Any = None) -> Checkpoint:
    for cp in numbered:  # newest first
        if cp.precise_time <= when:
            return cp
    if past is not None:  # the answer lies past the break: which one, nobody can say
        raise past.refusal(text)
    oldest = numbered[-1] if numbered else None
    since = f"; the oldest is from {timeref.describe(oldest.time)}" if oldest else ""
    raise NotFound(f"no checkpoint at or before {timeref.describe(when)} ({text!r}){since}")
