"""Per-session memory of the hooks: Gemini CLI's current turn (its tool payloads carry none)
and the project root of each cwd seen (so the no-change path needs no project registry).

One small JSON file per agent session under ``rewind-hooks/sessions/``; read cheaply on every
call (a file replaced atomically: a reader sees the old or the new one). Agents run hooks
concurrently (Claude Code, for parallel tool calls), so every change is a read-modify-write
under the session's lock (``<key>.lock`` beside it, an exclusive flock waited for at most
LOCK_SECONDS), never two hooks each saving what they read before the other's change.
"""

from __future__ import annotations

try:  # sha256 without hashlib's OpenSSL (the hook's start-up)
    from _sha256 import sha256
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha256
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewindfs.hooks import deadline, hooklog

KEEP_ROOTS = 32
LOCK_SECONDS = 5.0


def _path(agent: str, session: str) -> Path:
    key = sha256(f"{agent}\0{session}".encode("utf-8", "replace")).hexdigest()[:24]
    return hooklog.hooks_dir() / "sessions" / f"{key}.json"


def load(agent: str, session: str) -> dict[str, Any]:
    """The session's memory; empty when there is none, or when the sessions' folder is
    not this user's alone (what a planted file says would steer the hooks)."""
    path = _path(agent, session)
    try:
        hooklog.private_dir(path.parent, create=False)
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update(agent: str, session: str, change: Callable[[dict[str, Any]], bool]) -> None:
    """Apply `change` to the session's memory under its lock; saved when `change` says
    it changed something (True)."""
    path = _path(agent, session)
    hooklog.private_dir(path.parent)
    fd = os.open(path.with_suffix(".lock"),
                 os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        deadline.flock(fd, LOCK_SECONDS)
        data = load(agent, session)
        if change(data):
            _save(path, data)
    finally:
        os.close(fd)   # the lock goes with it


def _save(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        os.write(fd, json.dumps(data).encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def turn_of(agent: str, session: str) -> str:
    value = load(agent, session).get("turn")
    return value if isinstance(value, str) else ""


def start_turn(agent: str, session: str, turn: str) -> None:
    def change(data: dict[str, Any]) -> bool:
        data["turn"] = turn
        return True

    update(agent, session, change)


def root_of(agent: str, session: str, cwd: str) -> str:
    roots = load(agent, session).get("roots")
    value = roots.get(cwd) if isinstance(roots, dict) else None
    return value if isinstance(value, str) else ""


def remember_root(agent: str, session: str, cwd: str, root: str) -> None:
    def change(data: dict[str, Any]) -> bool:
        roots = data.get("roots") if isinstance(data.get("roots"), dict) else {}
        if roots.get(cwd) == root:
            return False
        roots.pop(cwd, None)
        roots[cwd] = root
        data["roots"] = dict(list(roots.items())[-KEEP_ROOTS:])
        return True

    update(agent, session, change)
