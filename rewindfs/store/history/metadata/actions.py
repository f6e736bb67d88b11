"""External actions (a PR opened, a message sent, a deploy) that a rollback cannot undo.

A harness records each one as it happens; they wait in `store/actions/<h16>.jsonl`
until the next checkpoint of the project carries them (see store.history.metadata.meta). Keeping
them in a file rather than in the harness's memory means a crash loses none, and
`rewind restore` in another process can warn about actions no checkpoint holds yet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from rewindfs.errors import InvalidInput
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock

MAX_FIELD = 2_000  # characters of kind / id / summary kept


@dataclass(frozen=True)
class Action:
    kind: str  # e.g. "github.pr.opened"
    id: str  # what the outside world calls it, e.g. "1234"
    summary: str = ""
    reversible: bool = False
    time: float = field(default_factory=time.time)  # epoch seconds, when it was recorded

    @classmethod
    def make(cls, kind: str, id: str | int, summary: str = "", reversible: bool = False
             ) -> Action:
        """A validated action: kind and id are required, everything is kept to one line."""
        kind_text = " ".join(str(kind or "").split())[:MAX_FIELD]
        id_text = " ".join(str(id if id is not None else "").split())[:MAX_FIELD]
        if not kind_text or not id_text:
            raise InvalidInput("an external action needs a kind and an id")
        from rewindfs.store.history.redaction import redact  # (writing only)

        summary_text = redact(" ".join(str(summary or "").split()))[:MAX_FIELD]
        return cls(kind_text, id_text, summary_text,
                   bool(reversible))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Action | None:
        try:
            return cls(str(data["kind"]), str(data["id"]), str(data.get("summary", "")),
                       bool(data.get("reversible", False)), float(data["time"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def describe(self) -> str:
        """`github.pr.opened #1234`, as the restore warnings name it."""
        return f"{self.kind} #{self.id.removeprefix('#')}"


def record(layout: Layout, h16: str, action: Action) -> None:
    path = layout.pending_actions(h16)
    with file_lock(_lock(layout, h16)):
        private.append_text(path, json.dumps(action.to_json()) + "\n")


def pending(layout: Layout, h16: str) -> list[Action]:
    """Actions recorded since the last checkpoint that carried actions, oldest first."""
    return _read(layout, h16)


class Batch:
    """The pending actions, held (no new ones are appended) until the block ends."""

    def __init__(self, layout: Layout, h16: str):
        self.layout, self.h16 = layout, h16
        self.items = _read(layout, h16)

    def clear(self) -> None:
        """They are carried by a checkpoint now: forget them."""
        if self.items:
            self.layout.pending_actions(self.h16).unlink(missing_ok=True)
            self.items = []


@contextmanager
def held(layout: Layout, h16: str) -> Iterator[Batch]:
    with file_lock(_lock(layout, h16)):
        yield Batch(layout, h16)


def _read(layout: Layout, h16: str) -> list[Action]:
    try:
        # A line a killed writer cut short (or any non-UTF-8 byte) is skipped below.
        text = layout.pending_actions(h16).read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            action = Action.from_json(json.loads(line))
        except ValueError:
            continue  # a torn line from a crash
        if action is not None:
            out.append(action)
    return out


def _lock(layout: Layout, h16: str):
    return layout.lock_file(f"{h16}.actions")
