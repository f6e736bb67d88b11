"""The agents whose snapshots rewindfs reads, and where each keeps its data.

    $XDG_DATA_HOME/<app>/              (default ~/.local/share/<app>)
      <app>.db                         SQLite, WAL mode ($KILO_DB / $OPENCODE_DB moves it;
                                       non-release channels use <app>-<channel>.db)
      storage/                         JSON records of older versions
      snapshot/<project id>/...        snapshot git dirs (store.foreign.places)

Kilo CLI is a fork of OpenCode and keeps the same records under its own names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rewindfs.errors import InvalidInput, NotFound
from rewindfs.sources.database import BUSY_SECONDS, Database
from rewindfs.sources.jsonstore import JsonStorage
from rewindfs.sources.records import Records
from rewindfs.sources.stepref import AGENT_NAMES


@dataclass(frozen=True)
class Agent:
    name: str  # as typed: `rewind list --agent kilo`, refs `kilo:3`
    app: str  # its folder under the XDG data home
    db_env: str  # environment variable naming its database
    id_file: str  # file in a project's git dir caching the project id
    label: str  # how people call it

    def data_dir(self, env: Mapping[str, str] | None = None) -> Path:
        env = os.environ if env is None else env
        base = env.get("XDG_DATA_HOME") or ""
        root = Path(base) if os.path.isabs(base) else Path(env.get("HOME") or Path.home()) \
            / ".local" / "share"
        return root / self.app

    def database(self, data: Path, env: Mapping[str, str] | None = None) -> Path | None:
        """The SQLite file the agent uses (None: there is none, only older storage)."""
        env = os.environ if env is None else env
        given = env.get(self.db_env)
        if given and given != ":memory:":
            path = Path(given) if os.path.isabs(given) else data / given
            return path if path.is_file() else None
        default = data / f"{self.app}.db"
        if default.is_file():
            return default
        channels = sorted(data.glob(f"{self.app}-*.db"), key=_mtime, reverse=True)
        return channels[0] if channels else None

    def records(self, data: Path | None = None, busy_seconds: float = BUSY_SECONDS,
                env: Mapping[str, str] | None = None) -> Records:
        """The agent's records: its database, else its older JSON storage."""
        data = data or self.data_dir(env)
        db = self.database(data, env)
        if db is not None:
            return Database(self.name, db, busy_seconds)
        storage = data / "storage"
        if (storage / "session").is_dir():
            return JsonStorage(self.name, storage)
        raise NotFound(f"no {self.label} sessions: nothing at {data} "
                       f"(set XDG_DATA_HOME or ${self.db_env} as {self.label} has them)")

    def signature(self, data: Path) -> tuple:
        """What the agent's records are made of, cheaply (a few stats): equal signatures,
        equal records. Its database files and storage folder."""
        out = []
        try:
            names = sorted(os.listdir(data))
        except OSError:
            return ()
        for name in names:
            if name.endswith((".db", ".db-wal")) or name == "storage":
                try:
                    st = os.stat(data / name)
                except OSError:
                    continue
                out.append((name, st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(out)

    def snapshot_root(self, data: Path, project_id: str) -> Path:
        return data / "snapshot" / project_id


AGENTS = {
    "kilo": Agent("kilo", "kilo", "KILO_DB", "kilo", "Kilo Code"),
    "opencode": Agent("opencode", "opencode", "OPENCODE_DB", "opencode", "OpenCode"),
}
assert set(AGENTS) == AGENT_NAMES, "sources.stepref names the agents too"


def agent_named(name: str) -> Agent:
    try:
        return AGENTS[name.lower()]
    except KeyError:
        raise InvalidInput(f"unknown agent {name!r}: use {' or '.join(AGENTS)}") from None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
