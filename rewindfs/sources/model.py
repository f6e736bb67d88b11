"""Sessions, turns and steps, made from an agent's records (sources.records).

A session is a conversation; each user message starts a turn; each model call in
it is a step. The agent snapshots the project as a git tree when a step starts
(`step-start`) and again when it finishes (`step-finish`), and records the files
the step changed (`patch`: the start tree and absolute paths). A step here is that
pair of trees; restoring to a step means going back to the tree it started from.

Older versions put several steps in one assistant message; newer ones give each
step its own. Both are read the same way: each `step-start` part begins a step,
and the `step-finish` and `patch` parts after it, in part order, belong to it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rewindfs.sources.records import (
    PATCH,
    STEP_FINISH,
    STEP_START,
    TEXT,
    History,
    PartRecord,
    SessionRecord,
    text_of,
)

PROMPT_EXCERPT = 72  # characters of a turn's prompt shown in listings


@dataclass
class Step:
    id: str  # the step-start part's id: stable for the step's life
    session_id: str
    turn: int  # 1-based within the session
    index: int  # 1-based within the turn
    time: float  # epoch seconds when the step started
    start_tree: str
    finish_tree: str | None = None
    finish_time: float | None = None
    files: list[str] | None = None  # absolute paths the agent recorded; None: not recorded
    reverted: bool = False  # hidden by a pending revert in the agent

    @property
    def name(self) -> str:
        """`2.1`: turn 2, step 1 (the step's directory in the mount)."""
        return f"{self.turn}.{self.index}"

    @property
    def changed(self) -> bool:
        if self.files is not None:
            return bool(self.files)
        return self.finish_tree is not None and self.finish_tree != self.start_tree


@dataclass
class Turn:
    message_id: str
    number: int
    prompt: str  # the user's words, whitespace folded
    time: float
    steps: list[Step] = field(default_factory=list)

    @property
    def excerpt(self) -> str:
        return excerpt(self.prompt)


@dataclass
class Session:
    id: str
    project_id: str
    directory: str
    worktree: str  # the project's root when the agent recorded it (paths are under it)
    parent_id: str | None
    title: str
    time: float
    turns: list[Turn] = field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        return [s for t in self.turns for s in t.steps]

    def turn_of(self, step: Step) -> Turn:
        return self.turns[step.turn - 1]


def build(record: SessionRecord, worktree: str, history: History) -> Session:
    """The session with its turns and steps, oldest first."""
    session = Session(record.id, record.project_id, record.directory, worktree,
                      record.parent_id, record.title, record.created_ms / 1000)
    messages = sorted((m for m in history.messages if m.session_id == record.id),
                      key=lambda m: (m.created_ms, m.id))
    parts: dict[str, list[PartRecord]] = {}
    for part in history.parts:
        if part.session_id == record.id:
            parts.setdefault(part.message_id, []).append(part)
    revert_from = _revert_point(record, messages)
    turn: Turn | None = None
    for position, message in enumerate(messages):
        mine = sorted(parts.get(message.id, []), key=lambda p: p.id)
        if message.role == "user":
            prompt = " ".join(text_of(p.data.get("text")) for p in mine
                              if p.type == TEXT and not p.data.get("synthetic"))
            turn = Turn(message.id, len(session.turns) + 1, " ".join(prompt.split()),
                        message.created_ms / 1000)
            session.turns.append(turn)
            continue
        if turn is None:  # an answer with no question before it (a damaged history)
            turn = Turn("", 1, "", message.created_ms / 1000)
            session.turns.append(turn)
        _add_steps(session, turn, mine, message.created_ms,
                   reverted=revert_from is not None and position >= revert_from)
    return session


def _add_steps(session: Session, turn: Turn, parts: list[PartRecord], created_ms: int,
               reverted: bool) -> None:
    step: Step | None = None
    for part in parts:
        data = part.data
        if part.type == STEP_START:
            tree = _tree(data.get("snapshot"))
            step = None
            if tree is not None:
                step = Step(part.id, session.id, turn.number, len(turn.steps) + 1,
                            (part.created_ms or created_ms) / 1000, tree, reverted=reverted)
                turn.steps.append(step)
        elif part.type == STEP_FINISH and step is not None:
            step.finish_tree = _tree(data.get("snapshot")) or step.finish_tree
            step.finish_time = (part.created_ms or created_ms) / 1000
        elif part.type == PATCH:
            owner = step if step is not None and data.get("hash") in (None, step.start_tree) \
                else _by_start(turn, data.get("hash"))
            files = data.get("files")
            if owner is not None and isinstance(files, list):
                owner.files = (owner.files or []) + [f for f in files if isinstance(f, str)]


def _by_start(turn: Turn, tree: object) -> Step | None:
    for step in reversed(turn.steps):
        if step.start_tree == tree:
            return step
    return None


def _revert_point(record: SessionRecord, messages: list) -> int | None:
    """Position of the first message a pending revert hides (the agent drops it and
    everything after at the next prompt)."""
    target = (record.revert or {}).get("messageID")
    for position, message in enumerate(messages):
        if message.id == target:
            return position
    return None


def _tree(value: object) -> str | None:
    text = text_of(value).lower()
    return text if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text) \
        else None


def excerpt(text: str, width: int = PROMPT_EXCERPT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def relative_files(step: Step, worktree: str, root: str) -> list[str]:
    """The step's files relative to `root` (the project as rewindfs knows it), for those
    under it. The agent recorded them under `worktree`; a moved project keeps the
    same relative paths."""
    if not step.files:
        return []
    out = []
    prefix = os.path.relpath(root, worktree) if root != worktree else ""
    for path in step.files:
        rel = os.path.relpath(path, worktree)
        if rel.startswith(".."):
            continue
        if prefix and prefix != ".":
            if not (rel + "/").startswith(prefix + "/"):
                continue
            rel = rel[len(prefix) + 1:]
        out.append(rel)
    return sorted(set(out))
