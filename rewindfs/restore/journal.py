"""The restore journal: every restore and undo of a project, so `rewind undo` can reverse one.

`worktrees/<h16>/restores.jsonl` in the store, one JSON object per line, appended
under the project lock. A restore writes its *intent* before the first file
changes and a *completion* record after the last, so a restore killed in between
(SIGKILL, a power cut) is still known and can be undone: `undo` puts the paths it
planned back as the pre-rollback snapshot holds them. Both records are fsynced (and
the file's name, when a record creates it); the intent only once the pre-rollback
commit it names is on disk, the completion once every file the restore wrote is.

Format, version 2 (each record carries `"v": 2`; paths are project-relative,
surrogate-escaped like `os.fsdecode`):

    {"v": 2, "event": "begin", "id": "<16 hex>", "kind": "restore",  # or "undo", "revert", ...
     "time": <epoch float>, "target": "<commit restored to>",
     "pre_rollback": "<commit holding the state before>",
     "undoes": "<id of the entry an undo reverses>" | null,
     "plan": [["<path>", "<blob id it gets>" | null], ...],  # null: the path is deleted
     "dirs": ["<directory the restore may create>", ...],
     "git": true}  # `--git`: .git too (absent: false); its undo moves .git back too
    {"v": 2, "event": "end", "id": "<same id>", "time": <epoch float>,
     "status": "done" | "failed" | "interrupted",  # failed: files failed, or an error
     "touched": ["<path written or deleted>", ...], "created_dirs": ["<dir>", ...]}
    {"v": 2, "event": "tidied", "id": "<same id>"}  # an unfinished entry's temp files removed

A begin without an end is an *unfinished* restore (the process died). "interrupted"
means Ctrl-C stopped it; `touched` then says exactly how far it got.

Version 1 (written before the intent record existed) is one line per finished
restore: {"target", "pre_rollback", "touched", "kind", "time", "created_dirs"}; it is
read as a finished entry. Readers skip lines they cannot parse (a line cut short
by a kill is followed by a newline before the next record is appended).

When the file grows past ROTATE_BYTES, the next begin rewrites it keeping the
newest KEEP_ENTRIES entries.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewindfs.store.objects import Layout, private

VERSION = 2
FILE_NAME = "restores.jsonl"
DONE, FAILED, INTERRUPTED = "done", "failed", "interrupted"
ROTATE_BYTES = 64 * 1024 * 1024
KEEP_ENTRIES = 50


@dataclass
class Entry:
    """One restore (or undo): its intent, and how it ended if it did."""

    target: str  # checkpoint restored to
    pre_rollback: str  # checkpoint holding the state before the restore
    touched: list[str] = field(default_factory=list)  # paths written or deleted (when ended)
    kind: str = "restore"  # "undo" for an undo (which can itself be undone), "revert", ...
    time: float = field(default_factory=time.time)
    created_dirs: list[str] = field(default_factory=list)  # made by the restore; undo may drop
    id: str | None = None  # None: a version 1 record
    undoes: str | None = None
    plan: list[tuple[str, str | None]] = field(default_factory=list)  # (path, blob id or None)
    dirs: list[str] = field(default_factory=list)  # directories the restore may create
    status: str | None = None  # None: unfinished (no end record)
    tidied: bool = False
    version: int = 1
    git: bool = False  # the project's .git was restored too (restore.gitrestore)

    @property
    def finished(self) -> bool:
        """Whether it ran to its end (with or without failed files); an interrupted
        restore counts as finished too: its end record says what it touched."""
        return self.status is not None

    @property
    def complete(self) -> bool:
        """Ran to its end with nothing interrupted (failed files are reported then)."""
        return self.status in (DONE, FAILED)

    def touched_paths(self) -> list[bytes]:
        return [os.fsencode(p) for p in self.touched]

    def created_dir_paths(self) -> set[bytes]:
        return {os.fsencode(p) for p in self.created_dirs}

    def planned_paths(self) -> list[bytes]:
        return [os.fsencode(p) for p, _ in self.plan]

    def expected(self) -> dict[bytes, str | None]:
        """What each planned path holds once the restore did it (None: absent)."""
        return {os.fsencode(p): oid for p, oid in self.plan}

    def dir_paths(self) -> set[bytes]:
        return {os.fsencode(p) for p in self.dirs}

    @property
    def changed_nothing(self) -> bool:
        """Whether it is known to have changed no file: it ran to its end touching none,
        or it planned none, and it was not a restore of .git too (which may have moved
        refs). An undo has nothing of it to put back, so undo walks past it."""
        return not self.git and not (self.touched if self.complete else self.plan)


def path_for(layout: Layout, h16: str) -> Path:
    return layout.worktree_admin(h16) / FILE_NAME


def begin(path: Path, *, kind: str, target: str, pre_rollback: str,
          plan: list[tuple[bytes, str | None]], dirs: list[bytes],
          undoes: str | None = None, git: bool = False) -> Entry:
    """Record the intent of a restore (durably) before it changes anything."""
    _rotate_if_big(path)
    entry = Entry(target, pre_rollback, kind=kind, id=secrets.token_hex(8), undoes=undoes,
                  plan=[(os.fsdecode(p), oid) for p, oid in plan],
                  dirs=[os.fsdecode(d) for d in dirs], version=VERSION, git=git)
    _append(path, {"v": VERSION, "event": "begin", "id": entry.id, "kind": kind,
                   "time": entry.time, "target": target, "pre_rollback": pre_rollback,
                   "undoes": undoes, "plan": [list(p) for p in entry.plan], "dirs": entry.dirs,
                   **({"git": True} if git else {})})
    return entry


def end(path: Path, entry: Entry, status: str, touched: list[bytes],
        created_dirs: list[bytes]) -> None:
    entry.status = status
    entry.touched = [os.fsdecode(p) for p in touched]
    entry.created_dirs = [os.fsdecode(d) for d in created_dirs]
    _append(path, {"v": VERSION, "event": "end", "id": entry.id, "time": time.time(),
                   "status": status, "touched": entry.touched,
                   "created_dirs": entry.created_dirs})


def mark_tidied(path: Path, entry: Entry) -> None:
    entry.tidied = True
    _append(path, {"v": VERSION, "event": "tidied", "id": entry.id}, sync=False)


def entries(path: Path) -> list[Entry]:
    """Every entry, oldest first (version 1 and 2 records alike)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    out: list[Entry] = []
    by_id: dict[str, Entry] = {}
    for line in raw.splitlines():
        try:
            record = json.loads(line.decode("utf-8"))
            if not isinstance(record, dict):
                continue
            if record.get("v") == VERSION:
                _apply(record, out, by_id)
            elif "v" not in record:
                out.append(_v1(record))
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            continue  # a damaged or cut-short line: skip it
    return out


def last(path: Path) -> Entry | None:
    found = entries(path)
    return found[-1] if found else None


def last_change(path: Path) -> Entry | None:
    """The newest entry that changed files (or may have: it did not finish), whatever
    its kind: what `rewind undo` takes back. Restores that changed nothing are walked
    past: undoing one would put nothing back."""
    return next((e for e in reversed(entries(path)) if not e.changed_nothing), None)


def undoable(path: Path) -> list[Entry]:
    """Restores (and reverts) still in effect that changed files, newest first: what
    `rewind undo --steps N` walks back through. Undos are not steps of their own."""
    found = entries(path)
    gone = _cancelled(found)
    return [e for e in reversed(found) if e.kind != "undo" and not e.changed_nothing
            and (e.id is None or e.id not in gone)]


def undone(path: Path) -> list[Entry]:
    """Entries taken back by an undo that still stands (agent.steps: a revert undone)."""
    found = entries(path)
    gone = _cancelled(found)
    return [e for e in found if e.id is not None and e.id in gone]


def _cancelled(found: list[Entry]) -> set[str]:
    """Ids of the entries an undo takes back: an undo cancels the entry it undoes, unless
    it was undone itself (a redo), or was refused before it changed anything (recorded
    by older versions)."""
    cancelled: set[str] = set()
    for entry in reversed(found):  # newest first: an undone undo cancels nothing
        if entry.undoes and entry.id not in cancelled \
                and (entry.status == DONE or not entry.changed_nothing):
            cancelled.add(entry.undoes)
    return cancelled


def unfinished(path: Path) -> Entry | None:
    """The last entry that may have changed files (what `rewind undo` takes back), when
    it did not run to its end (killed or interrupted)."""
    entry = last_change(path)
    return entry if entry is not None and not entry.complete else None


def untidied(path: Path) -> list[Entry]:
    """Entries that died midway and may have left temporary files behind."""
    return [e for e in entries(path) if e.version >= VERSION and not e.finished
            and not e.tidied]


# -- helpers ------------------------------------------------------------------------


def _apply(record: dict[str, Any], out: list[Entry], by_id: dict[str, Entry]) -> None:
    event, ident = record["event"], str(record["id"])
    if event == "begin":
        plan = [(str(p), None if oid is None else str(oid)) for p, oid in record["plan"]]
        entry = Entry(str(record["target"]), str(record["pre_rollback"]),
                      kind=str(record.get("kind", "restore")), time=float(record["time"]),
                      id=ident, undoes=record.get("undoes"), plan=plan,
                      dirs=[str(d) for d in record.get("dirs", [])], version=VERSION,
                      git=record.get("git") is True)
        out.append(entry)
        by_id[ident] = entry
    elif event == "end" and ident in by_id:
        entry = by_id[ident]
        entry.status = str(record["status"])
        entry.touched = [str(p) for p in record.get("touched", [])]
        entry.created_dirs = [str(d) for d in record.get("created_dirs", [])]
    elif event == "tidied" and ident in by_id:
        by_id[ident].tidied = True


def _v1(record: dict[str, Any]) -> Entry:
    return Entry(str(record["target"]), str(record["pre_rollback"]),
                 [str(p) for p in record.get("touched", [])], str(record.get("kind", "restore")),
                 float(record.get("time", 0.0)), [str(d) for d in record.get("created_dirs", [])],
                 status=DONE)


def _append(path: Path, record: dict[str, Any], *, sync: bool = True) -> None:
    private.append_record(path, (json.dumps(record, separators=(",", ":")) + "\n").encode(),
                          sync=sync)


def _rotate_if_big(path: Path) -> None:
    try:
        if path.stat().st_size <= ROTATE_BYTES:
            return
    except OSError:
        return
    keep = entries(path)[-KEEP_ENTRIES:]
    lines = []
    for e in keep:
        if e.version < VERSION:
            lines.append({"target": e.target, "pre_rollback": e.pre_rollback,
                          "touched": e.touched, "kind": e.kind, "time": e.time,
                          "created_dirs": e.created_dirs})
            continue
        lines.append({"v": VERSION, "event": "begin", "id": e.id, "kind": e.kind,
                      "time": e.time, "target": e.target, "pre_rollback": e.pre_rollback,
                      "undoes": e.undoes, "plan": [list(p) for p in e.plan], "dirs": e.dirs,
                      **({"git": True} if e.git else {})})
        if e.status is not None:
            lines.append({"v": VERSION, "event": "end", "id": e.id, "time": e.time,
                          "status": e.status, "touched": e.touched,
                          "created_dirs": e.created_dirs})
        if e.tidied:
            lines.append({"v": VERSION, "event": "tidied", "id": e.id})
    private.write_atomic(path, "".join(json.dumps(r, separators=(",", ":")) + "\n"
                                       for r in lines))
