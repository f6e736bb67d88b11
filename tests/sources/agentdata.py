"""Kilo Code / OpenCode data written the way those agents write it, for the layouts and
damage a real CLI cannot be made to produce on demand (older versions' JSON storage and
snapshot dirs, a gc'd tree, a corrupt record, a moved project).

The snapshot repository is made with git exactly as the agents drive it (`--git-dir` /
`--work-tree`, `add`, `write-tree`, no commit); the records follow what OpenCode 1.18.33
and Kilo CLI 7.7.7 write (their SQLite tables and JSON part shapes; see
rewindfs.sources.records). Real data from the real CLIs is in test_sources_agents.py.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conftest import isolated_git_env, make_git_repo

_ids = itertools.count(1)


def _id(prefix: str, ms: int) -> str:
    return f"{prefix}_{ms:012x}{next(_ids):04d}fixture"


@dataclass
class Step:
    id: str
    message: str
    start: str
    finish: str
    files: list[str]
    ms: int


@dataclass
class Turn:
    message: str
    prompt: str
    ms: int
    steps: list[Step] = field(default_factory=list)


@dataclass
class Session:
    id: str
    title: str
    ms: int
    turns: list[Turn] = field(default_factory=list)
    revert: dict | None = None


class AgentData:
    """One agent's data dir with one git project; `session`, `turn`, `step`, then `save`."""

    def __init__(self, root: Path, agent: str = "kilo", *, storage: str = "sqlite",
                 old_snapshot_dir: bool = False, files: dict[str, bytes] | None = None,
                 project: str | None = None):
        """`project`: its folder's name (another project in the same agent's data)."""
        self.agent = agent
        self.home = root / f"{agent}-home"
        self.data = self.home / ".local" / "share" / agent
        self.data.mkdir(parents=True, exist_ok=True)
        self.project = root / (project or f"{agent}-project")
        make_git_repo(self.project, files or {"a.txt": b"hello\n", "b.txt": b"bye\n"})
        self.project_id = subprocess.run(
            ["git", "-C", str(self.project), "rev-list", "--max-parents=0", "HEAD"],
            capture_output=True, text=True, check=True, env=isolated_git_env()).stdout.strip()
        (self.project / ".git" / agent).write_text(self.project_id)
        root_dir = self.data / "snapshot" / self.project_id
        self.gitdir = root_dir if old_snapshot_dir else root_dir / hashlib.sha1(
            str(self.project).encode()).hexdigest()
        self.storage = storage
        self.sessions: list[Session] = []
        self.clock = int(time.time() * 1000) - 3_600_000
        self.gitdir.mkdir(parents=True, exist_ok=True)
        self._git("init", "-q")
        self._git("config", "core.autocrlf", "false")

    @property
    def env(self) -> dict[str, str]:
        """What `rewind` needs to find this data."""
        return {"XDG_DATA_HOME": str(self.data.parent)}

    def _tick(self) -> int:
        self.clock += 1000
        return self.clock

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(self.gitdir), "--work-tree", str(self.project), *args],
            capture_output=True, text=True, check=True, env=isolated_git_env(),
            cwd=self.project).stdout.strip()

    def snapshot(self) -> str:
        self._git("add", "--all", ".")
        return self._git("write-tree")

    def pin(self) -> None:
        """Pin every snapshot tree as Kilo CLI 7.7.7 does (`refs/kilo/snapshots/<ms>/<tree>`),
        so the agent's own `git gc` keeps (and packs) them."""
        for session in self.sessions:
            for turn in session.turns:
                for step in turn.steps:
                    for tree in (step.start, step.finish):
                        self._git("update-ref", f"refs/kilo/snapshots/{step.ms}/{tree}", tree)

    def session(self, title: str = "Scripted session") -> Session:
        ms = self._tick()
        found = Session(_id("ses", ms), title, ms)
        self.sessions.append(found)
        return found

    def turn(self, prompt: str, session: Session | None = None) -> Turn:
        session = session or self.sessions[-1]
        ms = self._tick()
        found = Turn(_id("msg", ms), prompt, ms)
        session.turns.append(found)
        return found

    def step(self, change: Callable[[Path], object] | None = None,
             session: Session | None = None) -> Step:
        """One model step (in `session`, default the last one begun): snapshot,
        `change(project)`, snapshot again, the files it changed."""
        turn = (session or self.sessions[-1]).turns[-1]
        ms = self._tick()
        start = self.snapshot()
        if change is not None:
            change(self.project)
        finish = self.snapshot()
        names = self._git("diff-tree", "-r", "--name-only", start, finish).splitlines()
        found = Step(_id("prt", ms), _id("msg", ms), start, finish,
                     [str(self.project / n) for n in names if n], ms)
        turn.steps.append(found)
        return found

    # -- writing the records ------------------------------------------------------------

    def records(self) -> tuple[list, list, list]:
        """(sessions, messages, parts) as dicts of the agents' record shapes."""
        sessions, messages, parts = [], [], []
        for s in self.sessions:
            sessions.append({"id": s.id, "projectID": self.project_id,
                             "directory": str(self.project), "title": s.title,
                             "version": "fixture", "time": {"created": s.ms, "updated": s.ms},
                             **({"revert": s.revert} if s.revert else {})})
            for t in s.turns:
                messages.append({"id": t.message, "sessionID": s.id, "role": "user",
                                 "time": {"created": t.ms}})
                parts.append({"id": _id("prt", t.ms), "messageID": t.message, "sessionID": s.id,
                              "type": "text", "text": t.prompt, "ms": t.ms})
                for st in t.steps:
                    messages.append({"id": st.message, "sessionID": s.id, "role": "assistant",
                                     "parentID": t.message, "time": {"created": st.ms}})
                    base = {"messageID": st.message, "sessionID": s.id, "ms": st.ms}
                    parts.append({**base, "id": st.id, "type": "step-start",
                                  "snapshot": st.start})
                    parts.append({**base, "id": st.id + "b", "type": "tool", "tool": "bash",
                                  "state": {"status": "completed", "output": "x" * 100}})
                    parts.append({**base, "id": st.id + "c", "type": "step-finish",
                                  "snapshot": st.finish, "reason": "tool-calls"})
                    if st.files:
                        parts.append({**base, "id": st.id + "d", "type": "patch",
                                      "hash": st.start, "files": st.files})
        return sessions, messages, parts

    def save(self) -> None:
        if self.storage == "json":
            self._save_json()
        else:
            self._save_sqlite()

    def database(self) -> Path:
        return self.data / f"{self.agent}.db"

    def _save_sqlite(self) -> None:
        sessions, messages, parts = self.records()
        path = self.database()
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode = WAL")
        db.executescript(SCHEMA)
        db.execute("INSERT OR REPLACE INTO migration VALUES ('20260907102000_fixture', 1)")
        db.execute("INSERT OR REPLACE INTO project (id, worktree, vcs, time_created, "
                   "time_updated, sandboxes) VALUES (?, ?, 'git', 1, 1, '[]')",
                   (self.project_id, str(self.project)))
        for s in sessions:
            db.execute("INSERT OR REPLACE INTO session (id, project_id, slug, directory, title, "
                       "version, revert, time_created, time_updated) VALUES "
                       "(?, ?, '', ?, ?, ?, ?, ?, ?)",
                       (s["id"], s["projectID"], s["directory"], s["title"], s["version"],
                        json.dumps(s["revert"]) if "revert" in s else None,
                        s["time"]["created"], s["time"]["updated"]))
        for m in messages:
            data = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
            db.execute("INSERT OR REPLACE INTO message VALUES (?, ?, ?, ?, ?)",
                       (m["id"], m["sessionID"], m["time"]["created"], m["time"]["created"],
                        json.dumps(data)))
        for p in parts:
            data = {k: v for k, v in p.items() if k not in ("id", "messageID", "sessionID", "ms")}
            db.execute("INSERT OR REPLACE INTO part VALUES (?, ?, ?, ?, ?, ?)",
                       (p["id"], p["messageID"], p["sessionID"], p["ms"], p["ms"],
                        json.dumps(data)))
        db.commit()
        db.close()

    def _save_json(self) -> None:
        sessions, messages, parts = self.records()
        storage = self.data / "storage"
        _write(storage / "project" / f"{self.project_id}.json",
               {"id": self.project_id, "worktree": str(self.project), "vcs": "git",
                "time": {"created": 1}})
        for s in sessions:
            _write(storage / "session" / self.project_id / f"{s['id']}.json", s)
        for m in messages:
            _write(storage / "message" / m["sessionID"] / f"{m['id']}.json", m)
        for p in parts:
            data = {k: v for k, v in p.items() if k != "ms"}
            _write(storage / "part" / p["messageID"] / f"{p['id']}.json", data)
        (storage / "migration").write_text("2")


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


# The columns OpenCode 1.18.33 and Kilo CLI 7.7.7 give these tables (the others are left out).
SCHEMA = """
CREATE TABLE IF NOT EXISTS migration (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS project (id text PRIMARY KEY, worktree text NOT NULL, vcs text,
  name text, icon_url text, icon_url_override text, icon_color text,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_initialized integer,
  sandboxes text NOT NULL, commands text);
CREATE TABLE IF NOT EXISTS session (id text PRIMARY KEY, project_id text NOT NULL,
  workspace_id text, parent_id text, slug text NOT NULL, directory text NOT NULL, path text,
  title text NOT NULL, version text NOT NULL, share_url text, summary_additions integer,
  summary_deletions integer, summary_files integer, summary_diffs text, metadata text,
  cost real DEFAULT 0 NOT NULL, revert text, permission text, agent text, model text,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer,
  time_archived integer);
CREATE TABLE IF NOT EXISTS message (id text PRIMARY KEY, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE IF NOT EXISTS part (id text PRIMARY KEY, message_id text NOT NULL,
  session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL,
  data text NOT NULL);
CREATE INDEX IF NOT EXISTS part_session_idx ON part (session_id);
"""


def sample(root: Path, agent: str = "kilo", **options) -> AgentData:
    """Two turns: create new.txt and edit a.txt (two steps), then delete b.txt."""
    data = AgentData(root, agent, **options)
    data.session("Tidy the project")
    data.turn("make changes")
    data.step(lambda p: (p / "new.txt").write_text("created by agent\n"))
    data.step(lambda p: (p / "a.txt").write_text("hello edited\n"))
    data.step()  # the answer: no files changed
    data.turn("delete b")
    data.step(lambda p: (p / "b.txt").unlink())
    data.step()
    data.save()
    return data
