"""The size cap after every checkpoint: a cheap look, then a pruner in the background.

Once a checkpoint is taken, its caller (the agent API, the hooks, `rewind checkpoint`)
calls `after_checkpoint`. It compares the store's size with max_total_size_mb from what
objsizes remembers (the packs listed, only the loose-object directories written since
the last look scanned again: no walk of the object database), and only when the store
is past TRIGGER of its cap does it start the pruner: a detached process (its own
session, so it outlives a short-lived hook and its work never competes for the
caller's GIL), unless maintenance already holds the base. It never raises and never
waits. The pruner starts before the cap is reached, and takes the store well under it,
so that the checkpoints an agent takes while it runs (seconds) fit under the cap, and it
runs once every few checkpoints rather than after each.

The pruner (`run`) holds the base as the automatic sweep does (auto.base_locked: one
maintenance process at a time) and, while the store is past TRIGGER of its cap:

1. plans the drops that bring what the refs keep alive to TARGET of the cap (sizecap:
   the oldest unpinned checkpoints across projects, oldest first, never a project's
   newest nor a labelled one);
2. moves those projects' boundaries (history is never rewritten: every kept checkpoint
   keeps its id);
3. frees what nothing reaches now, the dropped checkpoints' objects and those of
   checkpoints max_snapshots unlisted alike (gc.reclaim): git rewrites only the packs
   that hold something unreachable (cleanpacks), at a moment no rewindfs writer is
   inside (looked for FREE_FIRST seconds without holding anyone back, then at the
   gate), keeping what Hermes may be writing.

What it did goes into the record (caprecord): which checkpoints went and why, what was
freed, and why the store is still past the trigger when it is (each project's newest
and labelled checkpoints alone; objects Hermes may still be writing). A checkpoint that
found the pruner busy started nothing, so the pruner looks at the size once more after
letting go of the base. After a pruning that could not get under the trigger, the next
one starts only once the store grew by RETRY_GROWTH of the cap or RETRY_SECONDS passed.

    python -m rewindfs.store.maintenance.autocap --base DIR --max-size-mb N
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

from rewindfs.errors import Busy
from rewindfs.lazylog import logger
from rewindfs.store.maintenance import caprecord, sizecap
from rewindfs.store.maintenance import gc as gc_mod
from rewindfs.store.maintenance.auto import base_locked, log_to_store, running
from rewindfs.store.maintenance.caprecord import CapPrune
from rewindfs.store.maintenance.objsizes import object_bytes
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.repo import Store

log = logger(__name__)
MiB = 1024 * 1024
TRIGGER = 0.85  # a pruning starts once the store is past this share of its cap ...
TARGET = 0.7  # ... and brings what is kept alive to this share
FREE_FIRST = 5.0  # seconds its prune step looks for a moment free of writers, unseen
ROUNDS = 8  # drop-and-free rounds of one pruning at most (new checkpoints meanwhile)
LOOKS = 4  # pruning runs of one pruner at most (it looks again after letting go)
RETRY_SECONDS = 60.0  # after a pruning that ended over the cap, the next waits this long ...
RETRY_GROWTH = 0.1  # ... or until the store grew by this share of the cap


def stored_bytes(layout: Layout) -> int:
    """What the cap is held against: the bytes of the store's objects (objsizes)."""
    return object_bytes(layout)[0]


def after_checkpoint(layout: Layout, max_total_size_mb: int) -> subprocess.Popen | None:
    """Start the pruner when the store is past TRIGGER of its cap and none runs; the
    process started, if any. Never raises, never waits."""
    try:
        cap = int(max_total_size_mb) * MiB
        if cap <= 0 or not (layout.store / "HEAD").exists():
            return None
        size = stored_bytes(layout)
        if size <= cap * TRIGGER or running(layout) or not _worth_trying(layout, size, cap):
            return None
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, "--base", str(layout.base),
             "--max-size-mb", str(int(max_total_size_mb))],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd="/", close_fds=True)
        # Reaped by a thread of ours while we live (no zombie in a long-lived agent); a
        # short-lived caller exits first and the pruner goes on, adopted.
        threading.Thread(target=child.wait, name="rewindfs-cap-reaper", daemon=True).start()
        return child
    except Exception:  # noqa: BLE001 - maintenance must never disturb the checkpoint
        log.debug("pruning to the size cap not started", exc_info=True)
        return None


def _worth_trying(layout: Layout, size: int, cap: int) -> bool:
    """False while the last pruning ended over the cap and too little changed since."""
    last = caprecord.read(layout)
    if last is None or last.left_over is None:
        return True
    return time.time() - last.ended > RETRY_SECONDS or \
        size > last.after_bytes + cap * RETRY_GROWTH


def run(layout: Layout, cap_bytes: int, by: str = caprecord.AFTER_CHECKPOINT
        ) -> CapPrune | None:
    """Bring the store well under `cap_bytes` now, in this process; its record, or None
    when the store was not past TRIGGER of the cap or other maintenance holds the base."""
    try:
        with base_locked(layout):
            return _prune(layout, cap_bytes, by)
    except Busy:
        return None


def _prune(layout: Layout, cap: int, by: str) -> CapPrune | None:
    size = stored_bytes(layout)
    start_at = int(cap * TRIGGER)
    if cap <= 0 or size <= start_at or not Store(layout).exists():
        return None
    record = CapPrune(by, cap, time.time(), size, why=caprecord.over_why(size, cap, TRIGGER))
    stuck = ""
    for _ in range(ROUNDS):
        before = size
        store = Store(layout)  # a handle of its own per round: libgit2 reads `shallow` once
        cap_plan = sizecap.plan(layout, store.repo, int(cap * TARGET))
        if cap_plan.drops:
            record.dropped += caprecord.dropped(layout, cap_plan.drops, cap)
            sizecap.apply(layout, store.repo, cap_plan)
        result = gc_mod.reclaim(layout, free_first=FREE_FIRST)
        record.kept_younger_than_minutes = result.kept_younger_than
        record.hermes_active = result.hermes_active
        size = stored_bytes(layout)
        if size <= start_at:
            break
        if cap_plan.exhausted and (cap_plan.expected_live or 0) > start_at:
            stuck = caprecord.pinned_why(cap_plan.expected_live or 0)
            break
        if not cap_plan.drops and before - size < cap // 100:
            break  # nothing to drop, and gc frees no more
    record.after_bytes, record.ended = size, time.time()
    if size > start_at:
        record.left_over = _left_over(record, stuck)
    caprecord.write(layout, record)
    log.info("pruned to the size cap (%s): %d checkpoints dropped, %s -> %s%s", by,
             len(record.dropped), caprecord.mib(record.before_bytes), caprecord.mib(size),
             f"; still past {TRIGGER:.0%} of it: {record.left_over}" if record.left_over
             else "")
    return record


def _left_over(record: CapPrune, stuck: str) -> str:
    if stuck:
        return stuck
    if record.hermes_active and record.kept_younger_than_minutes:
        return (f"objects younger than {record.kept_younger_than_minutes:g} minutes are kept "
                "while Hermes may still be writing them")
    if record.kept_younger_than_minutes:
        return (f"checkpoints were being written without pause: objects younger than "
                f"{record.kept_younger_than_minutes:g} minutes were kept")
    return "more was written while it pruned; the next checkpoint starts it again"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rewindfs.store.maintenance.autocap")
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--max-size-mb", required=True, type=int)
    args = parser.parse_args(argv)
    layout = Layout(args.base)
    log_to_store(layout)
    cap = args.max_size_mb * MiB
    try:
        for _ in range(LOOKS):
            record = run(layout, cap)
            # None: not past the trigger, or other maintenance holds the base (and looks)
            if record is None or record.left_over is not None or \
                    stored_bytes(layout) <= cap * TRIGGER:
                break
    except Exception:  # noqa: BLE001 - logged for whoever looks; nobody waits on us
        log.exception("pruning to the size cap failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
