"""Reading an agent's SQLite database (`kilo.db`, `opencode.db`) without ever writing to it.

The agent may be running: it keeps the database in WAL mode and writes while we
read. So the file is opened read-only through a `file:...?mode=ro` URI with
`query_only` on (nothing here can write, not even by mistake), everything one
listing needs is read in one transaction (a consistent snapshot under a live
writer), and a lock we cannot get within `busy_seconds` (a writer holding the
database exclusively) ends the read with one line instead of a hang. The only
file a read may touch is the `-shm` wal-index the running agent keeps beside it,
as every reader of a WAL database does; none is ever created (see `_read`).

Only the part rows steps are made of are fetched (tool output, the bulk of a
database, stays on disk): SQLite's JSON functions filter them in the query.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rewindfs.errors import Busy, NotFound, UnknownFormat
from rewindfs.sources.records import (
    STEP_PARTS,
    TEXT,
    History,
    MessageRecord,
    PartRecord,
    ProjectRecord,
    SessionRecord,
    int_of,
    text_of,
)

T = TypeVar("T")
BUSY_SECONDS = 3.0  # how long a read waits for a writer's exclusive lock
CHUNK = 500  # ids per IN (...): under every SQLite's limit on bound parameters
# Columns a listing needs; a database without them is a schema we cannot read.
REQUIRED = {
    "project": {"id", "worktree"},
    "session": {"id", "project_id", "directory", "parent_id", "title", "time_created"},
    "message": {"id", "session_id", "time_created", "data"},
    "part": {"id", "message_id", "session_id", "time_created", "data"},
}


class Database:
    """One agent database, opened read-only for each read."""

    def __init__(self, agent: str, path: Path, busy_seconds: float = BUSY_SECONDS):
        self.agent = agent
        self.path = path
        self.where = str(path)
        self.busy_seconds = busy_seconds
        self._columns: dict[str, set[str]] | None = None

    # -- the records ---------------------------------------------------------------

    def projects(self) -> list[ProjectRecord]:
        return self._read(lambda db: [ProjectRecord(text_of(i), text_of(w)) for i, w
                                      in db.execute("SELECT id, worktree FROM project")])

    def sessions(self, project_ids: list[str]) -> list[SessionRecord]:
        def read(db: sqlite3.Connection) -> list[SessionRecord]:
            revert = "revert" if "revert" in self._schema(db)["session"] else "NULL"
            query = ("SELECT id, project_id, directory, parent_id, title, time_created, "
                     f"{revert} FROM session WHERE project_id IN")
            return [SessionRecord(text_of(i), text_of(p), text_of(d), parent or None,
                                  text_of(t), int_of(c), _json_or_none(r))
                    for i, p, d, parent, t, c, r in _chunked(db, query, project_ids)]

        return self._read(read)

    def history(self, session_ids: list[str]) -> History:
        return self._read(lambda db: self._history(db, session_ids))

    def version(self) -> str:
        return self._read(schema_version)

    def _history(self, db: sqlite3.Connection, session_ids: list[str]) -> History:
        out = History()
        for mid, sid, created, data in _chunked(
                db, "SELECT id, session_id, time_created, data FROM message "
                    "WHERE session_id IN", session_ids):
            doc = _json_or_none(data)
            if doc is None:
                out.skipped.append(f"message {mid}")
                continue
            out.messages.append(MessageRecord(text_of(mid), text_of(sid), int_of(created),
                                              text_of(doc.get("role"))))
        users = {m.id for m in out.messages if m.role == "user"}
        for pid, mid, sid, created, data in self._parts(db, session_ids):
            doc = _json_or_none(data)
            if doc is None:
                out.skipped.append(f"part {pid}")
                continue
            kind = doc.get("type")
            if kind in STEP_PARTS or (kind == TEXT and mid in users):
                out.parts.append(PartRecord(text_of(pid), text_of(mid), text_of(sid),
                                            int_of(created), doc))
        return out

    # -- reading -----------------------------------------------------------------

    def _parts(self, db: sqlite3.Connection, session_ids: list[str]) -> list[tuple]:
        kinds = ", ".join(f"'{k}'" for k in (*STEP_PARTS, TEXT))
        try:
            return list(_chunked(
                db, "SELECT id, message_id, session_id, time_created, data FROM part "
                    f"WHERE json_extract(data, '$.type') IN ({kinds}) AND session_id IN",
                session_ids))
        except sqlite3.OperationalError as exc:
            if "json_extract" not in str(exc) and "malformed JSON" not in str(exc):
                raise
        # No JSON functions in this SQLite, or a row that is not JSON: filter here.
        return list(_chunked(db, "SELECT id, message_id, session_id, time_created, data "
                                 "FROM part WHERE session_id IN", session_ids))

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """fn(db) on a read-only connection, in one transaction.

        A database in WAL mode whose `-wal` and `-shm` files are not there (the agent is
        not running: it removed them on its way out) is opened `immutable`, because a
        plain read-only open would create both files in the agent's folder. Should the
        agent start writing meanwhile (the read then fails or finds the files there),
        it is read again the ordinary way, taking part in the WAL protocol as every
        reader must.
        """
        if self._quiet():
            try:
                result = self._once(fn, immutable=True)
            except (Busy, UnknownFormat):
                if self._quiet():
                    raise  # the same without a writer: no reason to read again
            else:
                if self._quiet():
                    return result
        return self._once(fn, immutable=False)

    def _quiet(self) -> bool:
        return not any(os.path.exists(f"{self.path}{end}") for end in ("-wal", "-shm"))

    def _once(self, fn: Callable[[sqlite3.Connection], T], immutable: bool) -> T:
        if not self.path.is_file():
            raise NotFound(f"no {self.agent} database at {self.path}")
        uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro"
        if immutable:
            uri += "&immutable=1"
        try:
            db = sqlite3.connect(uri, uri=True, timeout=self.busy_seconds,
                                 isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._failure(exc) from None
        try:
            db.execute("PRAGMA query_only = ON")
            db.execute("BEGIN")  # one snapshot for the whole read, under a live writer
            self._schema(db)
            return fn(db)
        except sqlite3.Error as exc:
            raise self._failure(exc) from None
        finally:
            db.close()

    def _schema(self, db: sqlite3.Connection) -> dict[str, set[str]]:
        if self._columns is None:
            columns = {table: {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                       for table in REQUIRED}
            if any(not need <= columns[table] for table, need in REQUIRED.items()):
                raise UnknownFormat(
                    f"{self.agent}'s database {self.path} has schema version "
                    f"{schema_version(db)}, which rewindfs cannot read (it lacks "
                    f"{_first_missing(columns)})")
            self._columns = columns
        return self._columns

    def _failure(self, exc: sqlite3.Error) -> Exception:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return Busy(f"{self.agent}'s database {self.path} is locked by another process "
                        f"(waited {self.busy_seconds:g} s); try again when {self.agent} is idle")
        if "not a database" in text or "malformed" in text:
            return UnknownFormat(f"{self.path} is not a readable {self.agent} database ({text})")
        return UnknownFormat(f"cannot read {self.agent}'s database {self.path}: {text}")


def schema_version(db: sqlite3.Connection) -> str:
    """The newest migration the agent applied (Drizzle's `migration` table, or its older
    `__drizzle_migrations`), else SQLite's user_version."""
    for query in ("SELECT id FROM migration ORDER BY time_completed DESC, id DESC LIMIT 1",
                  "SELECT hash FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1"):
        try:
            row = db.execute(query).fetchone()
        except sqlite3.Error:
            continue
        if row and row[0]:
            return str(row[0])
    row = db.execute("PRAGMA user_version").fetchone()
    return f"user_version {row[0] if row else 0}"


def _first_missing(columns: dict[str, set[str]]) -> str:
    for table, need in REQUIRED.items():
        if not columns[table]:
            return f"table {table}"
        missing = sorted(need - columns[table])
        if missing:
            return f"column {table}.{missing[0]}"
    return "nothing"


def _chunked(db: sqlite3.Connection, query: str, ids: Sequence[str]) -> Iterator[tuple]:
    for start in range(0, len(ids), CHUNK):
        chunk = list(ids[start:start + CHUNK])
        marks = ", ".join("?" * len(chunk))
        yield from db.execute(f"{query} ({marks})", chunk)


def _json_or_none(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        doc = json.loads(value)
    except (TypeError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
