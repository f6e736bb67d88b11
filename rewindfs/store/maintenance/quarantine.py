"""Quarantine: a deleted project's history is kept for retention_days after the deletion is seen.

"The agent deleted my project" is exactly when its history matters, so a project
whose directory was deleted (with evidence, see verdict) is not removed by the
sweep that first notices. That sweep, or `rewind status`, records the moment in
the project's record (`deleted_at`); the project then shows as *deleted since
<date>*, stays listed, mountable and restorable (`rewind restore REF --to DIR`),
and only retention_days later does an automatic sweep remove it (an explicit
`rewind prune` may do so sooner, after confirmation). A checkpoint of the
directory, by either tool, ends the quarantine (the record's last_touch moves past
`deleted_at`); so does `rewind adopt`, which moves the history to where the
project went.

Recording takes the project's lock and judges again under it, so a checkpoint
racing with the observation wins.
"""

from __future__ import annotations

import time

from rewindfs.errors import Busy
from rewindfs.lazylog import logger
from rewindfs.store.history.projects import (
    DELETED_AT,
    ProjectRecord,
    read_record,
    record_data,
    write_record,
)
from rewindfs.store.history.verdict import judge, workdir_deleted
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock

log = logger(__name__)
LOCK_WAIT = 0.2  # seconds; a busy project is being checkpointed: not deleted, nothing to note


def observe(layout: Layout, records: list[ProjectRecord], retention_days: float,
            now: float | None = None) -> int:
    """Note the first sighting of each deletion (and forget the sighting of a project whose
    directory is back); returns how many projects entered quarantine now."""
    return len([h for h, entered in noted(layout, records, retention_days, now).items()
                if entered])


def noted(layout: Layout, records: list[ProjectRecord], retention_days: float,
          now: float | None = None) -> dict[str, bool]:
    """`observe`, saying which records it rewrote: {h16: entered quarantine (else: back)}."""
    now = time.time() if now is None else now
    out = {}
    for record in records:
        verdict = judge(record, retention_days, now)
        back = DELETED_AT in record.extra and workdir_deleted(record) is False
        if verdict.first_seen or back:
            try:
                out[record.h16] = bool(_note(layout, record.h16, retention_days, now))
            except OSError as exc:  # a read-only store: nothing is noted, nothing is lost
                log.warning("could not note the deletion of %s: %s", record.workdir, exc)
    return out


def _note(layout: Layout, h16: str, retention_days: float, now: float) -> int:
    try:
        with file_lock(layout.lock_file(h16), timeout=LOCK_WAIT):
            record = read_record(layout, h16)
            if record is None:
                return 0
            verdict = judge(record, retention_days, now)
            data = record_data(record)
            if verdict.first_seen:
                data[DELETED_AT] = now
            elif DELETED_AT in data and workdir_deleted(record) is False:
                del data[DELETED_AT]
            else:
                return 0
            write_record(layout, h16, data)
            return int(verdict.first_seen)
    except Busy:
        return 0
