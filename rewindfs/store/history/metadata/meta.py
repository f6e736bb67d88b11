"""What a checkpoint carries besides files: agent state documents and external actions.

An agent's state (kanban cards, goal, memory pointers, the tail of its tool
history) belongs with the files it was working on, so a rollback can hand it back.
Actions that left the machine cannot be rolled back, so each checkpoint carries
the ones taken since the checkpoint before it, and a restore can warn about
those taken after its target.

Both live in the checkpoint's note (store.history.metadata.notes), never in its file tree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pygit2

from rewindfs.errors import InvalidInput
from rewindfs.store.history.chain import Checkpoint
from rewindfs.store.history.metadata import actions as actions_mod
from rewindfs.store.history.metadata import notes
from rewindfs.store.history.metadata.actions import Action
from rewindfs.store.objects.repo import Store

STATE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_STATE_BYTES = 4 * 1024 * 1024  # per checkpoint: state is metadata, not a second tree


@dataclass
class CheckpointMeta:
    state: dict[str, Any] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)  # taken since the previous checkpoint
    time: float | None = None  # precise time of the checkpoint (commit times are whole seconds)

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "time": self.time, "state": self.state,
                "actions": [a.to_json() for a in self.actions]}

    @classmethod
    def from_json(cls, doc: dict[str, Any] | None) -> CheckpointMeta:
        if not doc:
            return cls()
        state = doc.get("state") if isinstance(doc.get("state"), dict) else {}
        items = doc.get("actions") if isinstance(doc.get("actions"), list) else []
        found = [a for a in (Action.from_json(item) for item in items) if a is not None]
        when = doc.get("time")
        return cls(state, found, float(when) if isinstance(when, int | float) else None)


def validate_state(state: Any) -> dict[str, Any]:
    """`state` as {name: JSON value}; names must be usable as file and xattr names."""
    if state is None:
        return {}
    if not isinstance(state, dict):
        raise InvalidInput("agent state must be a dict of named JSON documents")
    for name in state:
        if not isinstance(name, str) or not STATE_NAME.match(name):
            raise InvalidInput(f"invalid state document name {name!r}: use 1-64 letters, "
                               "digits, '.', '_' or '-'")
    try:
        size = len(json.dumps(state))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"agent state is not JSON-serialisable: {exc}") from exc
    if size > MAX_STATE_BYTES:
        raise InvalidInput(f"agent state is {size} bytes; the limit is {MAX_STATE_BYTES}")
    return state


def meta_of(repo: pygit2.Repository, h16: str, commit: str) -> CheckpointMeta:
    return CheckpointMeta.from_json(notes.read(repo, h16, commit))


def actions_after(store: Store, h16: str, target: Checkpoint) -> list[Action]:
    """External actions taken after `target`, oldest first: carried by later checkpoints
    or still pending. Ordered by time, not by position in the history, so actions a
    rollback's own pre-rollback snapshot did not carry are placed right too."""
    repo = store.repo
    mine = meta_of(repo, h16, target.id)
    cut = mine.time if mine.time is not None else float(target.time)
    found = {(a.kind, a.id, a.time): a for a in actions_mod.pending(store.layout, h16)}
    for doc in notes.read_all(repo, h16).values():
        for a in CheckpointMeta.from_json(doc).actions:
            found.setdefault((a.kind, a.id, a.time), a)
    return sorted((a for a in found.values() if a.time > cut), key=lambda a: a.time)
