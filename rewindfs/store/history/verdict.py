"""Whether a project's history is still wanted: live, stale, missing, deleted, or orphan.

Deleting history is the one thing maintenance cannot undo, so a workdir that is
merely not there is not enough. A workdir counts as deleted only with positive
evidence that the directory itself was deleted (`deleted_path`):

1. its parent directory is there (a missing parent is a missing volume);
2. the parent is the very directory recorded while the project was there (same
   device and inode; either tool's record of it): an unmounted drive shows a
   different directory at the same path;
3. the parent holds something else. An unmounted drive can leave an empty
   directory behind, which is as much the signature of a detached volume as of
   an emptied one; and a device and inode can come back on another volume (a
   tmpfs or a USB stick mounted later at the same place reuses them), so an
   empty parent is no evidence even when it is a live mount point (Hermes takes
   that one as evidence; rewindfs does not).

A record without a parent identity (written by Hermes 0.19), an unreadable
record, or any probe that fails keeps the history; such a project is *missing*.

A deleted project is not removed at once: it is quarantined for retention_days
from when maintenance first saw it deleted (`deleted_at` in its record; see
quarantine), and only then is it an *orphan* that the automatic sweep removes.
Staleness (untouched for retention_days) applies to every other project,
present or missing, as in Hermes.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from rewindfs.store.history.projects import ProjectRecord

DAY = 86400.0


class State(Enum):
    LIVE = "live"
    STALE = "stale"  # untouched for retention_days: removed by prune
    MISSING = "missing"  # workdir not found, no evidence it was deleted: kept
    DELETED = "deleted"  # workdir deleted (with evidence), in quarantine: kept
    ORPHAN = "orphan"  # deleted, quarantine over: removed by prune unless orphans are kept


@dataclass(frozen=True)
class Verdict:
    state: State
    deleted_at: float | None = None  # deleted or orphan: when first seen (now if not yet)
    quarantine_until: float | None = None  # deleted: when it may go (None: only explicitly)
    first_seen: bool = False  # deleted, and no earlier sweep or status has seen it


def deleted_path(workdir: str | Path, identities: set[tuple[int, int]] | None) -> bool | None:
    """True: deleted (with evidence). False: there. None: absent, but no proof it was deleted.

    `identities` are the recorded (dev, ino) of the parent; None means the caller
    has no way to record one (Hermes v1 repositories), so step 2 is skipped, while
    an empty set (nothing recorded) is no evidence.
    """
    path = Path(workdir)
    try:
        os.lstat(path)
        return False
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            return None  # unreadable, not a directory on the way, I/O error: no evidence
    parent = path.parent
    if parent == path or identities is not None and not identities:
        return None
    try:
        st = os.stat(parent)
        if identities is not None and (st.st_dev, st.st_ino) not in identities:
            return None  # another directory at that path: a detached volume, not a deletion
        with os.scandir(parent) as entries:
            return True if next(entries, None) is not None else None
    except OSError:
        return None


def workdir_deleted(record: ProjectRecord) -> bool | None:
    """`deleted_path` for a project, with the parent identities its record holds."""
    return deleted_path(record.workdir, record.parent_identities())


def is_stale(record: ProjectRecord, retention_days: float, now: float | None = None) -> bool:
    """Untouched for longer than `retention_days` (0 disables retention; no timestamp: kept)."""
    if retention_days <= 0 or record.last_touch <= 0:
        return False
    return record.last_touch < (time.time() if now is None else now) - retention_days * DAY


def judge(record: ProjectRecord, retention_days: float, now: float | None = None) -> Verdict:
    """The project's state. A deleted project's quarantine lasts retention_days from when
    it was first seen deleted (0: until removed explicitly), however old the project is."""
    now = time.time() if now is None else now
    deleted = workdir_deleted(record)
    if deleted:
        seen = record.deleted_at
        since = seen if seen is not None else now
        until = since + retention_days * DAY if retention_days > 0 else None
        state = State.ORPHAN if until is not None and until < now else State.DELETED
        return Verdict(state, since, until, seen is None)
    if is_stale(record, retention_days, now):
        return Verdict(State.STALE)
    return Verdict(State.MISSING if deleted is None else State.LIVE)


def classify(record: ProjectRecord, retention_days: float, now: float | None = None) -> State:
    return judge(record, retention_days, now).state
