"""Whether a project's history is still wanted: live, stale, orphan, or missing.

Deleting history is the one thing maintenance cannot undo, so a workdir that is
merely not there is not enough: a project is an orphan only with positive
evidence that its directory was deleted, namely that its parent directory is
still there and is the very directory recorded at the last checkpoint (same
device and inode). An unmounted drive, a missing parent, a record written by
Hermes (which keeps no parent identity) or an unreadable record keeps the
history; such a project is reported as missing.
"""

from __future__ import annotations

import errno
import os
import time
from enum import Enum

from rewindfs.store.projects import ProjectRecord

DAY = 86400.0


class State(Enum):
    LIVE = "live"
    STALE = "stale"  # untouched for retention_days: removed by prune
    ORPHAN = "orphan"  # workdir deleted (with evidence): removed by prune unless kept
    MISSING = "missing"  # workdir not found, no evidence it was deleted: kept


def workdir_deleted(record: ProjectRecord) -> bool | None:
    """True: deleted (with evidence). False: present. None: absent but no proof it was deleted."""
    try:
        os.lstat(record.workdir)
        return False
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            return None  # unreadable, not a directory on the way, I/O error: no evidence
    dev, ino = record.extra.get("parent_dev"), record.extra.get("parent_ino")
    if not isinstance(dev, int) or not isinstance(ino, int):
        return None
    try:
        parent = os.stat(record.workdir.parent)
    except OSError:
        return None
    return True if (parent.st_dev, parent.st_ino) == (dev, ino) else None


def is_stale(record: ProjectRecord, retention_days: float, now: float | None = None) -> bool:
    """Untouched for longer than `retention_days` (0 disables retention; no timestamp: kept)."""
    if retention_days <= 0 or record.last_touch <= 0:
        return False
    return record.last_touch < (time.time() if now is None else now) - retention_days * DAY


def classify(record: ProjectRecord, retention_days: float, now: float | None = None) -> State:
    """The project's state; an orphan that is also stale counts as an orphan (as in Hermes)."""
    deleted = workdir_deleted(record)
    if deleted:
        return State.ORPHAN
    if is_stale(record, retention_days, now):
        return State.STALE
    return State.MISSING if deleted is None else State.LIVE
