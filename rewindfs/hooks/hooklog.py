"""Where the hooks keep their log and per-session state, and the log itself.

Everything lives in ``$HERMES_HOME/rewind-hooks/`` (0700; files 0600). The log is one line
per event (``time agent level message``): checkpoints taken, payloads ignored, errors and
checkpoints skipped for time. `rewind hooks status` shows the last error. The hook never
writes to the agent's stdout or stderr: what goes wrong goes here.

Imports nothing from the store: the hook writes here on paths that must stay cheap.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

MAX_LOG_BYTES = 1024 * 1024   # then the log moves to hook.log.1 (one old generation kept)
ERROR, SKIPPED, INFO = "error", "skipped", "info"


def hermes_home() -> Path:
    """As store.layout.default_home, without importing the store."""
    home = os.environ.get("HERMES_HOME") or os.path.join(os.path.expanduser("~"), ".hermes")
    return Path(home).expanduser()


def hooks_dir() -> Path:
    return hermes_home() / "rewind-hooks"


def log_path() -> Path:
    return hooks_dir() / "hook.log"


def ensure_dir() -> Path:
    path = hooks_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def write(agent: str, level: str, message: str) -> None:
    """Append one line; never raises (a hook that cannot log still must not fail)."""
    try:
        ensure_dir()
        path = log_path()
        try:
            if path.stat().st_size > MAX_LOG_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        except FileNotFoundError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        line = f"{stamp} {agent or '-'} {level} {' '.join(message.split())}\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def entries(agent: str | None = None) -> list[tuple[str, str, str, str]]:
    """(time, agent, level, message) of the log, oldest first."""
    out = []
    for path in (log_path().with_name("hook.log.1"), log_path()):
        try:
            text = path.read_text("utf-8", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            parts = line.split(" ", 3)
            if len(parts) == 4 and (agent is None or parts[1] == agent):
                out.append((parts[0], parts[1], parts[2], parts[3]))
    return out
