"""Per-session memory of the hooks: Gemini CLI's current turn (its tool payloads carry none),
the turns in which a file-writing tool already had its checkpoint (once per turn), and the
project root of each cwd seen (so the no-change path needs no project registry).

One small JSON file per agent session under ``rewind-hooks/sessions/``; read cheaply on every
call, written atomically and only when something changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rewindfs.hooks import hooklog

KEEP_WRITTEN = 64   # turns remembered per session
KEEP_ROOTS = 32


def _path(agent: str, session: str) -> Path:
    key = hashlib.sha256(f"{agent}\0{session}".encode("utf-8", "replace")).hexdigest()[:24]
    return hooklog.hooks_dir() / "sessions" / f"{key}.json"


def load(agent: str, session: str) -> dict[str, Any]:
    try:
        data = json.loads(_path(agent, session).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(agent: str, session: str, data: dict[str, Any]) -> None:
    path = _path(agent, session)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, json.dumps(data).encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def turn_of(agent: str, session: str) -> str:
    value = load(agent, session).get("turn")
    return value if isinstance(value, str) else ""


def start_turn(agent: str, session: str, turn: str) -> None:
    data = load(agent, session)
    data["turn"] = turn
    save(agent, session, data)


def written(agent: str, session: str, key: str) -> bool:
    return key in (load(agent, session).get("written") or [])


def mark_written(agent: str, session: str, key: str) -> None:
    data = load(agent, session)
    keys = [k for k in data.get("written") or [] if isinstance(k, str) and k != key]
    data["written"] = [*keys, key][-KEEP_WRITTEN:]
    save(agent, session, data)


def root_of(agent: str, session: str, cwd: str) -> str:
    roots = load(agent, session).get("roots")
    value = roots.get(cwd) if isinstance(roots, dict) else None
    return value if isinstance(value, str) else ""


def remember_root(agent: str, session: str, cwd: str, root: str) -> None:
    data = load(agent, session)
    roots = data.get("roots") if isinstance(data.get("roots"), dict) else {}
    if roots.get(cwd) == root:
        return
    roots.pop(cwd, None)
    roots[cwd] = root
    data["roots"] = dict(list(roots.items())[-KEEP_ROOTS:])
    save(agent, session, data)
