"""Writers and an explicit gc, kept apart: what lets `rewind prune` free space at once.

git's prune deletes every unreachable object older than its expiry. An object a
checkpoint has written but not yet linked from a ref is unreachable, so an
automatic gc keeps everything younger than a grace period. An explicit gc
(`rewind prune`, `rewind clear`) frees the space now instead, by excluding
rewindfs writers while it prunes:

* Every rewindfs writer (a checkpoint, a pre-rollback snapshot, a diff's capture,
  notes) holds the *writers* lock shared from before it writes its first object
  until its ref has moved (`writing`). Readers and the automatic sweep never take it.
* The explicit gc takes it exclusively (`excluded`) for its prune step only, so
  a writer waits at most that long. When it holds the lock no rewindfs writer is
  between writing objects and moving its ref: every object of theirs that is
  unreachable then is garbage, whether it sits loose or in a pack.
* An exclusive request must not starve while writers overlap (flock prefers
  nobody), so there is a second lock, the *gate*: a writer passes through it
  (shared, for an instant) on its way in, and the gc holds it exclusively while
  it waits for the writers inside to finish, at most HOLD seconds at a time, so
  a long checkpoint in flight delays the others by no more than that. A gc nobody
  waits for (the pruning to the size cap after a checkpoint) first looks for a
  moment with no writer inside without the gate (`free_first`), so a writer waits
  only while it prunes, never while it waits.

Hermes writes objects too. Current Hermes holds its own store lock
(`<base parent>/.<base name>.lock`, see `hermes_lock_path`) around a whole
checkpoint, so the gc takes that one as well, waiting a bounded time. Hermes
0.19 takes no lock; its writers are covered in gc (see `gc.hermes_active`).

A thread that already holds the writers lock passes through `writing` again
without touching the locks: taking the gate a second time could deadlock with a
gc that holds the gate and waits for this very thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from rewindfs.errors import Busy
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock

WRITERS = "writers"
GATE = "writers-gate"
HOLD = 0.5  # seconds new writers may be held at the gate per attempt of a gc
GIVE_UP = 120.0  # seconds a gc tries before it settles for less (see gc)
POLL = 0.01  # seconds between looks for a moment free of writers

_held = threading.local()


def _depth() -> dict[Path, int]:
    found = getattr(_held, "depth", None)
    if found is None:
        found = _held.depth = {}
    return found


@contextmanager
def writing(layout: Layout) -> Iterator[None]:
    """Held by a rewindfs writer while it writes objects and moves refs (shared, re-entrant)."""
    key = layout.lock_file(WRITERS)
    depth = _depth()
    if depth.get(key):
        depth[key] += 1
        try:
            yield
        finally:
            depth[key] -= 1
        return
    with ExitStack() as stack:
        while True:
            with file_lock(layout.lock_file(GATE), shared=True):
                fd = stack.enter_context(file_lock(key, shared=True))
            if _still_there(key, fd):
                break
            # `rewind clear` deleted the lock file while we waited: a gc starting now
            # would lock the new file and never see ours.
            stack.close()
        depth[key] = 1
        try:
            yield
        finally:
            depth[key] = 0


def _still_there(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


@contextmanager
def excluded(layout: Layout, give_up: float = GIVE_UP, *, free_first: float = 0.0
             ) -> Iterator[None]:
    """No rewindfs writer is writing for the duration of the block.

    For `free_first` seconds, a moment with no writer inside is looked for without
    holding anyone back. Then writers already inside are waited for, but new ones are
    held at the gate for at most HOLD seconds per attempt: a long checkpoint in flight
    (a first one of a huge tree) must not stall every other agent's checkpoints behind
    it. After `give_up` seconds without a moment free of writers: Busy.
    """
    with ExitStack() as stack:
        if _free_moment(layout, stack, free_first):
            yield
            return
        deadline = time.monotonic() + give_up
        while True:
            stack.enter_context(file_lock(layout.lock_file(GATE)))
            try:
                stack.enter_context(file_lock(layout.lock_file(WRITERS), timeout=HOLD))
                break
            except Busy:
                stack.close()
                if time.monotonic() >= deadline:
                    raise Busy("checkpoints are being written without pause; "
                               "try again in a moment") from None
                time.sleep(HOLD)  # let the writers queued at the gate through
        yield


def _free_moment(layout: Layout, stack: ExitStack, seconds: float) -> bool:
    """Take the writers lock at a moment no writer holds it, within `seconds`."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            stack.enter_context(file_lock(layout.lock_file(WRITERS), timeout=0.0))
            return True
        except Busy:
            time.sleep(POLL)
    return False


def hermes_lock_path(layout: Layout) -> Path:
    """Hermes's own store lock (current upstream): next to the base, so `clear` cannot remove it."""
    base = layout.base.resolve()
    return base.with_name(f".{base.name}.lock")


@contextmanager
def hermes_excluded(layout: Layout, timeout: float) -> Iterator[bool]:
    """Hold Hermes's store lock if it can be had within `timeout` s; yields whether it is held.

    Hermes holds it for a whole checkpoint (seconds); not getting it means one is
    in flight, which the caller must then allow for.
    """
    with ExitStack() as stack:
        try:
            stack.enter_context(file_lock(hermes_lock_path(layout), timeout=timeout))
            held = True
        except (Busy, OSError):  # busy, or a base whose parent we cannot write
            held = False
        yield held
