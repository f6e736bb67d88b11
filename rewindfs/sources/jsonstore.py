"""Reading the JSON records older Kilo and OpenCode versions kept under `storage/`.

    storage/project/<project>.json          {worktree, vcs, time}
    storage/session/<project>/<session>.json {directory, parentID, title, time, revert}
    storage/message/<session>/<message>.json {role, time: {created}}
    storage/part/<message>/<part>.json       {type, snapshot | hash, files | text, ...}
    storage/migration                        how many storage migrations ran (0-2)

Ids come from the file names, as the agents' own migration to SQLite takes them. A
record that cannot be read (half written, corrupt) is skipped and named in
`History.skipped`; it never stops the rest from being listed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rewindfs.errors import NotFound, UnknownFormat
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

KNOWN_MIGRATIONS = 2  # storage migrations the last JSON-storage versions knew


class JsonStorage:
    def __init__(self, agent: str, root: Path):
        self.agent = agent
        self.root = root
        self.where = str(root)
        self._checked = False

    def projects(self) -> list[ProjectRecord]:
        out = []
        for path in self._files("project"):
            doc = _load(path)
            if doc is not None:
                out.append(ProjectRecord(path.stem, text_of(doc.get("worktree"))))
        return out

    def sessions(self, project_ids: list[str]) -> list[SessionRecord]:
        out = []
        for pid in project_ids:
            for path in self._files("session", pid):
                doc = _load(path)
                if doc is None:
                    continue
                revert = doc.get("revert")
                out.append(SessionRecord(
                    path.stem, pid, text_of(doc.get("directory")), doc.get("parentID") or None,
                    text_of(doc.get("title")), int_of(_time(doc).get("created")),
                    revert if isinstance(revert, dict) else None))
        return out

    def history(self, session_ids: list[str]) -> History:
        out = History()
        for sid in session_ids:
            for path in self._files("message", sid):
                doc = _load(path)
                if doc is None:
                    out.skipped.append(str(path))
                    continue
                out.messages.append(MessageRecord(path.stem, sid,
                                                  int_of(_time(doc).get("created")),
                                                  text_of(doc.get("role"))))
        users = {m.id for m in out.messages if m.role == "user"}
        created = {m.id: m.created_ms for m in out.messages}
        for message in out.messages:
            for path in self._files("part", message.id):
                doc = _load(path)
                if doc is None:
                    out.skipped.append(str(path))
                    continue
                kind = doc.get("type")
                if kind in STEP_PARTS or (kind == TEXT and message.id in users):
                    when = int_of(_time(doc).get("start"), created[message.id])
                    out.parts.append(PartRecord(path.stem, message.id, message.session_id,
                                                when, doc))
        return out

    def version(self) -> str:
        try:
            text = (self.root / "migration").read_text().strip()
        except OSError:
            return "0"
        return text.strip('"') or "0"

    def _files(self, *where: str) -> list[Path]:
        self._check()
        folder = self.root.joinpath(*where)
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        except OSError:
            return []
        return [folder / n for n in names]

    def _check(self) -> None:
        if self._checked:
            return
        if not self.root.is_dir():
            raise NotFound(f"no {self.agent} storage at {self.root}")
        version = self.version()
        if not version.isdigit() or int(version) > KNOWN_MIGRATIONS:
            raise UnknownFormat(f"{self.agent}'s storage {self.root} has storage version "
                                f"{version}, which rewindfs cannot read (it reads 0 to "
                                f"{KNOWN_MIGRATIONS})")
        self._checked = True


def _load(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _time(doc: dict[str, Any]) -> dict[str, Any]:
    value = doc.get("time")
    return value if isinstance(value, dict) else {}
