"""The records Kilo Code and OpenCode keep about their sessions, as plain values.

Both agents keep the same four kinds of record, in SQLite (`kilo.db`, `opencode.db`)
or, in older versions, as one JSON file each under `storage/`:

    project   id (root commit, remote hash or a cached id), worktree
    session   id, project, directory, parent, title, revert
    message   id, session, role (user / assistant), time
    part      id, message, data: `step-start` {snapshot: tree}, `step-finish`
              {snapshot: tree}, `patch` {hash: the step-start tree, files: absolute
              paths}, `text` {text} (the user's prompt), and many kinds we never read

Readers (sources.database, sources.jsonstore) return these; sources.model makes
sessions, turns and steps of them. Ids sort by time within a session (messages and
parts ascending); session ids do not (OpenCode's sort newest first), so sessions are
ordered by their time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# The part types a step is made of; every other part (tool calls and their output,
# reasoning, files) is never read.
STEP_START, STEP_FINISH, PATCH, TEXT = "step-start", "step-finish", "patch", "text"
STEP_PARTS = (STEP_START, STEP_FINISH, PATCH)


@dataclass(frozen=True)
class ProjectRecord:
    id: str
    worktree: str


@dataclass(frozen=True)
class SessionRecord:
    id: str
    project_id: str
    directory: str
    parent_id: str | None
    title: str
    created_ms: int
    revert: dict[str, Any] | None = None  # {messageID, partID?, snapshot?}: a pending revert


@dataclass(frozen=True)
class MessageRecord:
    id: str
    session_id: str
    created_ms: int
    role: str


@dataclass(frozen=True)
class PartRecord:
    id: str
    message_id: str
    session_id: str
    created_ms: int
    data: dict[str, Any]

    @property
    def type(self) -> str:
        value = self.data.get("type")
        return value if isinstance(value, str) else ""


@dataclass
class History:
    """What one read of the records gave: messages and the parts steps are made of, plus
    the records that could not be read (named, so a caller can say so once)."""

    messages: list[MessageRecord] = field(default_factory=list)
    parts: list[PartRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class Records(Protocol):
    """One agent's records, read-only, wherever they are kept."""

    where: str  # the database file or storage directory, for messages

    def projects(self) -> list[ProjectRecord]: ...

    def sessions(self, project_ids: list[str]) -> list[SessionRecord]: ...

    def history(self, session_ids: list[str]) -> History: ...

    def version(self) -> str: ...


def text_of(value: object, default: str = "") -> str:
    return value if isinstance(value, str) else default


def int_of(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
