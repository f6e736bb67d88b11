"""The step log replayed (store.history.metadata.steplog): every step with the marks it ran
between, the reverts redo can still take back, and the marks themselves.

A *mark* is a state of the project's files the log recorded, in the order the log
recorded it (captures and appends happen under the log's lock, so that order is the order
of the captures): a step's begin, its end (`end_step`) or its tool call's after event
(the hooks), and a revert's or redo's state before and after it changed the files. The
change from one mark to the next belongs to the steps whose window (begin mark up to end
mark) spans it; a step still open spans everything after its begin. The change a revert
or redo made itself belongs to nobody (`Mark.own`). rewindfs.agent.attribution reads
who changed what from these.

Events (one JSON object a line):
- begin: step, turn, tree, commit, time; agent, session and call for a step of an
  agent session (the hooks; `begin_step(session=...)`); files, for a write tool's call:
  the only files it can change (so it owns no other file's change in its window);
- end: step, tree, commit, changed, created, deleted (`end_step`, a revert settling a
  step still running);
- after: agent, session, call, tree, commit (a hook's after event): it ends the oldest
  step of that session still open for that call;
- revert: steps, turns, agent, session, pre_rollback, touched, created_dirs, kept (the
  files another session's changes kept), before_tree, after_tree;
- unrevert: the same for the redo of the last revert.
Logs written before sessions were recorded read as one session (every name empty).
A revert or redo that `rewind undo` took back (restore.journal) counts as never made.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from rewindfs import restore as restore_mod
from rewindfs.errors import InvalidInput, NotFound
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
    agent: str = ""
    session: str = ""
    call: str = ""            # the tool call a hook's step brackets (its after event names it)
    start: int = 0            # the mark it began at
    stop: int | None = None   # the mark it ended at; None: still open
    kept: frozenset[bytes] = frozenset()  # reverted: the files its revert left as they were
    files: frozenset[bytes] | None = None  # the only files it can change (a write tool's)

    @property
    def who(self) -> tuple[str, str]:
        """The agent session it belongs to (("", "") for steps of no named session)."""
        return self.agent, self.session

    def to_dict(self) -> dict[str, Any]:
        return {"step_id": self.id, "turn_id": self.turn, "status": self.status,
                "agent": self.agent or None, "session": self.session or None,
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
    agent: str = ""
    session: str = ""
    after_tree: str | None = None   # the files as the revert left them (None: not recorded)

    @property
    def who(self) -> tuple[str, str]:
        return self.agent, self.session


@dataclass
class Mark:
    tree: str | None
    own: bool = False   # the change from here to the next mark is a revert's or redo's


@dataclass
class Timeline:
    """The log replayed: every step in order, the reverts redo can still undo, the marks."""

    steps: dict[str, Step] = field(default_factory=dict)
    reverts: list[Revert] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)

    def active(self) -> list[Step]:
        return [s for s in self.steps.values() if s.status in (OPEN, DONE)]

    def mark(self, tree: Any) -> int:
        self.marks.append(Mark(tree if isinstance(tree, str) and tree else None))
        return len(self.marks) - 1

    def find(self, step_or_turn: str, session: str | None = None) -> Step:
        """The step, or the first active step of the turn; of `session` (an id or its
        first characters) when given. A turn that two sessions share is refused."""
        active = [s for s in self.active() if session is None or _is(s, session)]
        for s in active:
            if s.id == step_or_turn:
                return s
        turn = [s for s in active if s.turn == step_or_turn]
        sessions = list(dict.fromkeys(s.who for s in turn))
        if len(sessions) > 1:
            named = ", ".join(describe_session(*w) for w in sessions)
            raise InvalidInput(f"turn {step_or_turn!r} is in {len(sessions)} sessions "
                               f"({named}): name one with --session")
        if turn:
            return turn[0]
        if step_or_turn in self.steps or any(s.turn == step_or_turn
                                             for s in self.steps.values()):
            raise NotFound(f"step {step_or_turn!r} is already reverted")
        where = "" if session is None else f" in session {session!r}"
        raise NotFound(f"no step or turn {step_or_turn!r} to revert to{where}")

    def chosen(self, target: Step) -> list[Step]:
        """What a revert to `target` takes back: it and the later active steps of its
        session (every other session's steps stay)."""
        active = self.active()
        at = active.index(target)
        return [s for s in active[at:] if s.who == target.who]


def describe_session(agent: str, session: str) -> str:
    """`claude-code session 3f2a...`, for output (empty names: the steps of no session)."""
    if not agent and not session:
        return "steps of no agent session"
    return f"{agent or 'agent'} session {session or '?'}"


def _is(step: Step, session: str) -> bool:
    return bool(session) and (step.session == session or step.session.startswith(session))


def timeline_of(layout: Any, h16: str) -> Timeline:
    """The project's step log, read (a snapshot: for readers that decide nothing)."""
    return replayed(layout, h16, steplog.read(layout, h16))


def replayed(layout: Any, h16: str, events: list[dict[str, Any]]) -> Timeline:
    """`events` replayed, less the reverts and redos `rewind undo` took back (the restore
    journal is read only when the log holds a revert or redo that restored files)."""
    made = {e.get("pre_rollback") for e in events
            if e.get("event") in ("revert", "unrevert")} - {None}
    return replay(events, _undone(layout, h16) & made if made else set())


def _undone(layout: Any, h16: str) -> set[str]:
    """The pre-rollback snapshots of reverts and redos that `rewind undo` took back."""
    jpath = restore_mod.journal.path_for(layout, h16)
    return {e.pre_rollback for e in restore_mod.journal.undone(jpath)
            if e.kind in ("revert", "unrevert") and e.pre_rollback}


def replay(events: list[dict[str, Any]], undone: Collection[str] = ()) -> Timeline:
    """`undone`: pre-rollback snapshots of reverts and redos `rewind undo` took back:
    those events are passed over."""
    tl = Timeline()
    running: dict[tuple[str, str], list[Step]] = {}   # hook steps still open, per session
    for e in events:
        kind = e.get("event")
        if kind in ("revert", "unrevert") and e.get("pre_rollback") in undone:
            continue
        try:
            if kind == "begin":
                _begin(tl, e, running)
            elif kind == "end":
                s = tl.steps.get(e["step"])
                if s is not None and s.status == OPEN:
                    _close(tl, s, e)
                    s.changed, s.created, s.deleted = e["changed"], e["created"], e["deleted"]
            elif kind == "after":
                _after(tl, e, running)
            elif kind == "revert":
                after = _own_change(tl, e)
                kept = frozenset(os.fsencode(p) for p in e.get("kept", []))
                for sid in e["steps"]:
                    if sid in tl.steps:
                        tl.steps[sid].status, tl.steps[sid].kept = REVERTED, kept
                tl.reverts.append(Revert(e["steps"], e["turns"], e.get("pre_rollback"),
                                         e.get("touched", []), e.get("created_dirs", []),
                                         _text(e, "agent"), _text(e, "session"), after))
            elif kind == "unrevert" and tl.reverts:
                _own_change(tl, e)
                for sid in tl.reverts.pop().steps:
                    if sid in tl.steps and tl.steps[sid].status == REVERTED:
                        tl.steps[sid].status, tl.steps[sid].kept = DONE, frozenset()
        except (KeyError, TypeError, AttributeError):
            continue  # an event from a damaged line: skip it
    return tl


def _begin(tl: Timeline, e: dict[str, Any], running: dict) -> None:
    agent, session, call = (_text(e, k) for k in ("agent", "session", "call"))
    who = (agent, session)
    turn, sid = e["turn"], e["step"]
    # New work of a session after its reverts: its reverted steps are gone for good, as
    # chat agents discard the messages after the point they rewound to. Other sessions'
    # reverts stay redoable.
    for revert in [r for r in tl.reverts if r.who == who]:
        for rid in revert.steps:
            if rid in tl.steps and tl.steps[rid].status == REVERTED:
                tl.steps[rid].status = DISCARDED
        tl.reverts.remove(revert)
    at = tl.mark(e["tree"])
    if call:
        # A hook step whose after event never came (Codex sends none for apply_patch; an
        # agent may send none for a tool that failed) ended at the latest when the next
        # call of its session began. Were it still running, what it changes from here on
        # is in its session's next step: still that session's.
        for s in running.get(who, []):
            if s.status == OPEN and s.stop is None and tl.steps.get(s.id) is s:
                s.stop, s.after_tree, s.status = at, tl.marks[at].tree, DONE
        running[who] = []
    tl.steps.pop(sid, None)
    named = e.get("files")
    files = frozenset(os.fsencode(f) for f in named if isinstance(f, str)) \
        if isinstance(named, list) else None
    step = Step(sid, turn, e["tree"], e.get("commit"), e["time"], agent=agent,
                session=session, call=call, start=at, files=files)
    tl.steps[sid] = step
    if call:
        running[who].append(step)


def _after(tl: Timeline, e: dict[str, Any], running: dict) -> None:
    """A hook's after event ends the oldest step of its session still open for its call."""
    who, call = (_text(e, "agent"), _text(e, "session")), _text(e, "call")
    for s in running.get(who, []):
        if (s.call == call and s.status == OPEN and s.stop is None
                and tl.steps.get(s.id) is s):
            _close(tl, s, e)
            running[who].remove(s)
            return
    tl.mark(e.get("tree"))   # a state all the same (its begin was not recorded)


def _text(e: dict[str, Any], key: str) -> str:
    value = e.get(key, "")
    return value if isinstance(value, str) else ""


def _close(tl: Timeline, s: Step, e: dict[str, Any]) -> int:
    at = tl.mark(e.get("tree"))
    s.stop, s.status = at, DONE
    s.after_tree, s.after_commit, s.ended = e.get("tree"), e.get("commit"), e.get("time")
    return at


def _own_change(tl: Timeline, e: dict[str, Any]) -> str | None:
    """A revert's or redo's marks: the files before it and after it, the change between
    them its own. None when the event records neither (older logs)."""
    before, after = e.get("before_tree"), e.get("after_tree")
    if not isinstance(before, str) or not isinstance(after, str):
        return None
    tl.marks[tl.mark(before)].own = True
    tl.mark(after)
    return after
