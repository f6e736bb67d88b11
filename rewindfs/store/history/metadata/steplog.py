"""The step log: what an agent's steps did, so a turn or step can be reverted and redone.

One JSON event per line in `store/steps/<h16>.jsonl` (begin, end, after, revert,
unrevert; see rewindfs.agent.timeline for their meaning). A file rather than commit
trailers because reverts and redos are not checkpoints, and a step that changed
nothing writes no checkpoint at all; the checkpoints a step did write carry
`Rewind-Step`, `Rewind-Turn` and `Rewind-Phase` trailers as well, for readers of
the history. Readers and writers hold an flock, so a harness restarted in another
process carries on with the same log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock, write_atomic

MAX_BYTES = 8 * 1024 * 1024  # beyond this the oldest half of the events is dropped


class StepLog:
    """The log of one project, held exclusively for the life of a `session` block."""

    def __init__(self, path: Path):
        self.path = path
        self._events: list[dict[str, Any]] | None = None

    def events(self) -> list[dict[str, Any]]:
        if self._events is None:
            self._events = _read(self.path)
        return self._events

    def append(self, event: dict[str, Any]) -> None:
        private.append_record(self.path, (json.dumps(event, sort_keys=True) + "\n").encode())
        if self._events is not None:
            self._events.append(event)
        if self.path.stat().st_size > MAX_BYTES:
            self._compact()

    def _compact(self) -> None:
        events = _read(self.path)
        keep = events[len(events) // 2:]
        write_atomic(self.path, "".join(json.dumps(e, sort_keys=True) + "\n" for e in keep))
        self._events = keep


@contextmanager
def session(layout: Layout, h16: str) -> Iterator[StepLog]:
    """The project's step log, locked against other writers until the block ends."""
    with file_lock(layout.lock_file(f"{h16}.steps")):
        yield StepLog(layout.step_log(h16))


def read(layout: Layout, h16: str) -> list[dict[str, Any]]:
    """A snapshot of the events, for readers that decide nothing (e.g. `rewind show`)."""
    with file_lock(layout.lock_file(f"{h16}.steps"), shared=True):
        return _read(layout.step_log(h16))


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a torn line from a crash
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            out.append(event)
    return out
