"""What passes between a hook and the resident helper (hooks.helper), and what the helper
takes from it: one JSON line each way per message, every field of a request checked.

A request comes from a process of the same user (the socket's peer is checked) but
carries what an agent handed its hook, so the helper trusts none of it: each field is
checked for type and size (`check`: one line saying which field is wrong, answered as
an error, the helper stays up), and of the hook's environment only the rewindfs
settings (`REWIND_*`, names and values checked) reach the checkpoint. PATH, HOME and
HERMES_HOME are the helper's own, fixed when it started from an environment reduced to
what a checkpoint needs (hooks.isolation): no API key of the agent's lives on in it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import sys
from typing import Any

SOCKET = "helper.sock"
MAX_REQUEST = 1024 * 1024
MAX_TEXT = 4096          # a reason, a turn, a path
MAX_COMMAND = 4096       # of a tool call's command: the checkpoint names it in its reason only
MAX_SETTINGS = 64
SETTING = re.compile(r"REWIND_[A-Z0-9_]{1,64}")



def code_key() -> str:
    """Which rewindfs this is: its environment, interpreter and the newest mtime of its
    source files. The interpreter by its real path: the hooks run a venv's `python`, the
    `rewind` script its `python3`, the same program (else each would find the other's
    helper stale, stop it and start its own)."""
    newest, pending = 0, [os.path.dirname(os.path.dirname(os.path.realpath(__file__)))]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.name.endswith(".py"):
                        newest = max(newest, entry.stat().st_mtime_ns)
                    elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            pass
    return f"{sys.prefix}:{os.path.realpath(sys.executable)}:{newest}"


MAX_SOCKET_PATH = 103   # bytes of a Unix socket's path: 108 on Linux, 104 on macOS/BSD


def address(folder_fd: int, folder: os.PathLike[str] | str) -> str | None:
    """Where the socket is: through the directory's descriptor (a socket's path must stay
    short, and a Hermes home can lie deeper than that); off Linux (or with
    REWIND_PORTABLE=proc) the folder's own path, None when that is too long."""
    from rewindfs import portable

    if portable.linux("proc"):
        return f"/proc/self/fd/{folder_fd}/{SOCKET}"
    path = os.path.join(os.fspath(folder), SOCKET)
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def peer_uid(sock: socket.socket) -> int:
    if hasattr(socket, "SO_PEERCRED"):   # Linux
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1]
    # macOS and the BSDs: LOCAL_PEERCRED (SOL_LOCAL 0, option 1) gives a struct xucred
    # (version, uid, ...); where that fails too, the folder's mode (this user's alone,
    # hooklog.private_dir) is the only guard, so no peer is trusted.
    try:
        creds = sock.getsockopt(0, 1, struct.calcsize("2I"))
        return struct.unpack("2I", creds[:8])[1]
    except OSError:
        return -1


class BadRequest(ValueError):
    """A request the helper does not take: answered with an error, nothing done."""


def send(sock: socket.socket, data: dict[str, Any]) -> None:
    sock.sendall(json.dumps(data).encode() + b"\n")


def receive(sock: socket.socket, limit: int = MAX_REQUEST) -> dict[str, Any] | None:
    """One message: a JSON object on one line (None: the peer closed, or sent something
    else, or more than `limit` bytes). Reads byte runs only up to the line's end, so a
    message that follows stays in the socket for the next call."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536, socket.MSG_PEEK)
        if not chunk:
            break
        end = chunk.find(b"\n")
        data += sock.recv(len(chunk) if end < 0 else end + 1)
        if len(data) > limit:
            return None
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def settings() -> dict[str, str]:
    """The rewindfs settings of this process's environment, for a request."""
    return {k: v for k, v in os.environ.items() if SETTING.fullmatch(k)}


def _text(request: dict[str, Any], field: str, limit: int = MAX_TEXT,
          path: bool = False) -> str:
    value = request.get(field, "")
    if not isinstance(value, str) or len(value) > limit or "\0" in value:
        raise BadRequest(f"bad request: {field!r} is not a string of at most {limit} "
                         "characters")
    if path and value and not value.startswith("/"):
        raise BadRequest(f"bad request: {field!r} is not an absolute path")
    return value


def check(request: dict[str, Any], fields: int) -> dict[str, Any]:
    """The request's fields, checked (BadRequest names the first wrong one): `fields` is
    how many a tool call has (payloads.ToolCall)."""
    out: dict[str, Any] = {"code": _text(request, "code"), "home": _text(request, "home",
                                                                           path=True)}
    env = request.get("env", {})
    if not isinstance(env, dict) or len(env) > MAX_SETTINGS or not all(
            isinstance(k, str) and SETTING.fullmatch(k) and isinstance(v, str)
            and len(v) <= MAX_TEXT and "\0" not in v for k, v in env.items()):
        raise BadRequest("bad request: 'env' is not a map of REWIND_* settings")
    out["env"] = env
    kind = request.get("kind")
    if kind is not None:
        raise BadRequest(f"bad request: unknown kind {str(kind)[:40]!r}")
    call = request.get("call")
    if not isinstance(call, list) or len(call) != fields or not all(
            isinstance(v, str) and len(v) <= MAX_COMMAND and "\0" not in v for v in call):
        raise BadRequest(f"bad request: 'call' is not a list of {fields} strings")
    out.update(call=call, reason=_text(request, "reason"), turn=_text(request, "turn"),
               root=_text(request, "root", path=True))
    return out
