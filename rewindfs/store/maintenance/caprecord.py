"""What the last pruning to the size cap did: which checkpoints went, why, and what it freed.

Written by whoever held the store to max_total_size_mb (the pruner a checkpoint started,
the automatic sweep, `rewind prune`), read by `rewind status`: `store/rewind-size-cap.json`,
replaced whole each time (a record only informative: not fsynced). Each dropped
checkpoint is named by its project, workdir, id, time and own reason, with why it went;
the record says why the pruning ran, and why the store is still over its cap when it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rewindfs.store.history.projects import read_record
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout

if TYPE_CHECKING:
    from rewindfs.store.maintenance.sizecap import Drop

VERSION = 1
KEPT = 500  # dropped checkpoints named in the record (the count says how many in all)
AFTER_CHECKPOINT = "after a checkpoint"
AUTOMATIC_SWEEP = "the automatic sweep"
EXPLICIT_PRUNE = "rewind prune"
MiB = 1024 * 1024


@dataclass
class Dropped:
    project: str  # h16
    workdir: str | None  # None: a project without a record
    commit: str
    time: float  # when the checkpoint was taken
    reason: str  # the checkpoint's own reason ("before: rm -rf build")
    why: str  # why it went


@dataclass
class CapPrune:
    by: str
    cap_bytes: int
    started: float
    before_bytes: int  # the store's objects, when it started
    after_bytes: int = 0  # ... when it ended
    ended: float = 0.0
    why: str = ""  # why it ran
    dropped: list[Dropped] = field(default_factory=list)
    dropped_count: int = 0  # all of them (the list keeps the newest KEPT)
    # why the store is still past where pruning starts (None: it is not), over its cap or not
    left_over: str | None = None
    kept_younger_than_minutes: float = 0.0  # unreachable objects this young were kept
    hermes_active: bool = False  # ... because Hermes may be writing them

    @property
    def freed_bytes(self) -> int:
        return max(0, self.before_bytes - self.after_bytes)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "freed_bytes": self.freed_bytes}


def record_path(layout: Layout):
    return layout.store / "rewind-size-cap.json"


def over_why(size: int, cap: int, share: float = 1.0) -> str:
    """Why a pruning ran: the store was over its cap (or the share of it pruning starts at)."""
    if share >= 1.0 or size > cap:
        return f"the store was over its {mib(cap)} cap ({mib(size)})"
    return f"the store was over {share:.0%} of its {mib(cap)} cap ({mib(size)})"


def pinned_why(live: int) -> str:
    """Why no pruning gets the store under its cap: what it may not drop is over it."""
    return (f"each project's newest checkpoint and the labelled ones alone hold {mib(live)} "
            "(raise max_total_size_mb, or remove labels)")


def dropped(layout: Layout, drops: Iterable[Drop], cap: int) -> list[Dropped]:
    """The record's entries for checkpoints a cap plan dropped."""
    workdirs: dict[str, str | None] = {}
    out = []
    for drop in drops:
        if drop.h16 not in workdirs:
            record = read_record(layout, drop.h16)
            workdirs[drop.h16] = str(record.workdir) if record is not None else None
        out.append(Dropped(drop.h16, workdirs[drop.h16], drop.commit, drop.time, drop.reason,
                           f"oldest unpinned checkpoint, to keep the store under its "
                           f"{mib(cap)} cap"))
    return out


def write(layout: Layout, record: CapPrune) -> None:
    """Replace the record (errors ignored: it is only informative)."""
    record.dropped_count = max(record.dropped_count, len(record.dropped))
    data = record.to_dict()
    data["dropped"] = data["dropped"][-KEPT:]
    try:
        private.write_atomic(record_path(layout), json.dumps({"version": VERSION, **data}),
                             durable=False)
    except OSError:
        pass


def read(layout: Layout) -> CapPrune | None:
    """The last pruning's record; None when there is none (or it cannot be read)."""
    try:
        data = json.loads(record_path(layout).read_bytes())
        if not isinstance(data, dict) or data.pop("version", None) != VERSION:
            return None
        data.pop("freed_bytes", None)
        data["dropped"] = [Dropped(**d) for d in data.get("dropped", [])]
        return CapPrune(**data)
    except (OSError, ValueError, TypeError):
        return None


def mib(n: int) -> str:
    value = n / MiB
    return f"{value:,.0f} MiB" if value >= 10 or value == int(value) else f"{value:,.1f} MiB"
