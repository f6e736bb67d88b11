"""The step log replayed: every step in order (open, done, reverted, discarded), the
reverts a redo can still take back, and what `rewind undo` took back of them (a revert
or redo undone counts as never made)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from rewindfs import restore as restore_mod
from rewindfs import store as st
from rewindfs.errors import NotFound
from rewindfs.store.history import steplog

OPEN, DONE, REVERTED, DISCARDED = "open", "done", "reverted", "discarded"


@dataclass
class Step:
    id: str
    turn: str
    before_tree: str
    before_commit: str | None
    began: float
    after_tree: str | None = None
    after_commit: str | None = None
    ended: float | None = None
    changed: list[str] = field(default_factory=list)  # surrogate-escaped project paths
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status: str = OPEN

    def to_dict(self) -> dict[str, Any]:
        return {"step_id": self.id, "turn_id": self.turn, "status": self.status,
                "before": self.before_commit, "after": self.after_commit,
                "changed_files": self.changed, "created_files": self.created,
                "deleted_files": self.deleted, "began": self.began, "ended": self.ended}


@dataclass
class Revert:
    steps: list[str]
    turns: list[str]
    pre_rollback: str | None
    touched: list[str]
    created_dirs: list[str]


@dataclass
class Timeline:
    """The log replayed: every step in order, and the reverts that redo can still undo."""

    steps: dict[str, Step] = field(default_factory=dict)
    reverts: list[Revert] = field(default_factory=list)

    def active(self) -> list[Step]:
        return [s for s in self.steps.values() if s.status in (OPEN, DONE)]

    def find(self, step_or_turn: str) -> int:
        """Index in `active()` of the step, or of the first step of the turn."""
        active = self.active()
        for i, s in enumerate(active):
            if s.id == step_or_turn:
                return i
        for i, s in enumerate(active):
            if s.turn == step_or_turn:
                return i
        if step_or_turn in self.steps:
            raise NotFound(f"step {step_or_turn!r} is already reverted")
        raise NotFound(f"no step or turn {step_or_turn!r} to revert to")


def replay(events: list[dict[str, Any]], undone: Collection[str] = ()) -> Timeline:
    """`undone`: pre-rollback snapshots of reverts and redos `rewind undo` took back
    (restore.journal): those events are passed over."""
    tl = Timeline()
    for e in events:
        kind = e.get("event")
        if kind in ("revert", "unrevert") and e.get("pre_rollback") in undone:
            continue
        try:
            if kind == "begin":
                if tl.reverts:  # new work after a revert: the reverted steps are gone for good
                    for s in tl.steps.values():
                        if s.status == REVERTED:
                            s.status = DISCARDED
                    tl.reverts.clear()
                tl.steps.pop(e["step"], None)
                tl.steps[e["step"]] = Step(e["step"], e["turn"], e["tree"], e.get("commit"),
                                           e["time"])
            elif kind == "end":
                s = tl.steps.get(e["step"])
                if s is not None and s.status == OPEN:
                    s.after_tree, s.after_commit, s.ended = e["tree"], e.get("commit"), e["time"]
                    s.changed, s.created, s.deleted = e["changed"], e["created"], e["deleted"]
                    s.status = DONE
            elif kind == "revert":
                for sid in e["steps"]:
                    if sid in tl.steps:
                        tl.steps[sid].status = REVERTED
                tl.reverts.append(Revert(e["steps"], e["turns"], e.get("pre_rollback"),
                                         e.get("touched", []), e.get("created_dirs", [])))
            elif kind == "unrevert" and tl.reverts:
                for sid in tl.reverts.pop().steps:
                    if sid in tl.steps and tl.steps[sid].status == REVERTED:
                        tl.steps[sid].status = DONE
        except (KeyError, TypeError):
            continue  # an event from a damaged line: skip it
    return tl


def timeline_of(layout: st.Layout, h16: str) -> Timeline:
    return replayed(layout, h16, steplog.read(layout, h16))


def replayed(layout: st.Layout, h16: str, events: list[dict[str, Any]]) -> Timeline:
    """`events` replayed, less the reverts and redos `rewind undo` took back (the restore
    journal is read only when the log holds a revert or redo that restored files)."""
    made = {e.get("pre_rollback") for e in events
            if e.get("event") in ("revert", "unrevert")} - {None}
    return replay(events, _undone(layout, h16) & made if made else set())


def _undone(layout: st.Layout, h16: str) -> set[str]:
    """The pre-rollback snapshots of reverts and redos that `rewind undo` took back."""
    jpath = restore_mod.journal.path_for(layout, h16)
    return {e.pre_rollback for e in restore_mod.journal.undone(jpath)
            if e.kind in ("revert", "unrevert")}
