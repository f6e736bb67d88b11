"""What passes between the resident process and its clients (the hooks: hooks.helper; the
`rewind` command line: resident.client; its own children's captures: resident.source),
and what it takes from them: one message each way at a time, a dict of plain values
(str, int, bool, None, lists and dicts of them) in Python's own `marshal` format behind
its length in 4 bytes (a command's descriptors 0-2 ride along with its go-ahead), every
field of a request checked. marshal because it is built in: json's import (re, enum) cost
every `rewind` and every hook ~15 ms, as much as the interpreter's own start. marshal is
not meant for data from someone else: only a process of this same user (the peer's uid,
checked by both sides before a byte is read) can send one, and what it could do with a
crafted message it can do to this user's processes anyway.

A request comes from a process of the same user (the socket's peer is checked) but
carries what an agent handed its hook, so the helper trusts none of it: each field is
checked for type and size (`check`: one line saying which field is wrong, answered as
an error, the helper stays up), and of the hook's environment only the rewindfs
settings (`REWIND_*`, names and values checked) reach the checkpoint. PATH, HOME and
HERMES_HOME are the helper's own, fixed when it started from an environment reduced to
what a checkpoint needs (hooks.isolation): no API key of the agent's lives on in it.
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys

TYPE_CHECKING = False  # (typing, socket, json and re: milliseconds of every client)
if TYPE_CHECKING:
    import socket
    from typing import Any

SOCKET = "helper.sock"
MAX_REQUEST = 1024 * 1024
MAX_TEXT = 4096          # a reason, a turn, a path
MAX_COMMAND = 4096       # of a tool call's command: the checkpoint names it in its reason only
MAX_SETTINGS = 64
SETTING = r"REWIND_[A-Z0-9_]{1,64}"   # the name of a rewindfs setting (a regex)


def is_setting(name: str) -> bool:
    import re

    return re.fullmatch(SETTING, name) is not None



def code_key() -> str:
    """Which rewindfs this is: its version, interpreter, environment and where its code
    lives. The interpreter by its real path: the hooks run a venv's `python`, the
    `rewind` script its `python3`, the same program (else each would find the other's
    process stale, stop it and start its own). A change to the code in place (an edit,
    an upgrade into the same place) is the resident process's own to see: it watches
    every file it loaded (resident.server)."""
    from rewindfs import __version__

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    return f"{__version__}:{sys.prefix}:{os.path.realpath(sys.executable)}:{package}"


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


def connect(timeout: float) -> socket.socket | None:
    """A connection to this Hermes home's resident process (its peer checked to be this
    user), or None when none listens or its folder is not this user's alone. Imports
    nothing a `rewind` client would not (resident.client)."""
    from rewindfs.hooks import hooklog

    folder = hooklog.hooks_path()
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        if hooklog.unsafe(os.fstat(fd), folder) is not None:
            raise OSError("not this user's alone")
        sock.settimeout(timeout)
        where = address(fd, folder)
        if where is None:
            raise OSError("no address")
        sock.connect(where)
        if peer_uid(sock) != os.getuid():
            raise OSError("not this user's")
        return sock
    except OSError:
        sock.close()
        return None
    finally:
        os.close(fd)


def peer_uid(sock: socket.socket) -> int:
    if hasattr(_socket, "SO_PEERCRED"):   # Linux: struct ucred {pid, uid, gid}, 3 ints
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        return int.from_bytes(creds[4:8], sys.byteorder)
    # macOS and the BSDs: LOCAL_PEERCRED (SOL_LOCAL 0, option 1) gives a struct xucred
    # (version, uid, ...); where that fails too, the folder's mode (this user's alone,
    # hooklog.private_dir) is the only guard, so no peer is trusted.
    try:
        creds = sock.getsockopt(0, 1, 8)
        return int.from_bytes(creds[4:8], sys.byteorder)
    except OSError:
        return -1


def send_with_fds(sock: socket.socket, data: dict[str, Any], fds: list[int]) -> None:
    """`send`, with descriptors riding along (SCM_RIGHTS)."""
    payload = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
    sock.sendmsg([encode(data)], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, payload)])


class BadRequest(ValueError):
    """A request the helper does not take: answered with an error, nothing done."""


LENGTH = 4   # bytes of a message's length, big-endian, before it


def encode(data: dict[str, Any]) -> bytes:
    body = marshal.dumps(_lists(data), 4)
    return len(body).to_bytes(LENGTH, "big") + body


def send(sock: socket.socket, data: dict[str, Any]) -> None:
    sock.sendall(encode(data))


def receive(sock: socket.socket, limit: int = MAX_REQUEST) -> dict[str, Any] | None:
    """One message, a dict (None: the peer closed, or sent something else, or more than
    `limit` bytes). Reads exactly the message's bytes: one that follows stays in the
    socket for the next call."""
    head = _exactly(sock, LENGTH)
    size = int.from_bytes(head, "big") if head is not None else limit + 1
    body = _exactly(sock, size) if size <= limit else None
    if body is None:
        return None
    try:
        message = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return None
    return message if _plain(message) and isinstance(message, dict) else None


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return data


def _lists(value: Any) -> Any:
    """`value` with its tuples as lists and its keys as strings (what a JSON message made
    of them: the receiver takes nothing else)."""
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _lists(v) for k, v in value.items()}
    return value


def _plain(value: object, depth: int = 0) -> bool:
    """Only the values a message is made of (marshal also makes code objects, sets ...)."""
    if value is None or type(value) in (str, int, bool, float):
        return True
    if depth > 32:
        return False
    if type(value) is list:
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    return False


def receive_with_fds(sock: socket.socket, limit: int = MAX_REQUEST, fds: int = 3
                     ) -> tuple[dict[str, Any] | None, list[int]]:
    """`receive`, and the descriptors that came with the message's first bytes (a
    command's 0-2: resident.client), which the caller closes."""
    # A peek takes copies of the descriptors; the plain reads of `receive` then drop the
    # originals (a read that asks for no ancillary data closes what rode along).
    # (socket.recv_fds drops its flags before Python 3.13: recvmsg itself.)
    import array

    ints = array.array("i")
    data, ancillary, _flags, _addr = sock.recvmsg(
        65536, _socket.CMSG_LEN(fds * ints.itemsize), _socket.MSG_PEEK)
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            ints.frombytes(payload[: len(payload) - len(payload) % ints.itemsize])
    if not data:
        return None, list(ints)
    return receive(sock, limit), list(ints)


def settings() -> dict[str, str]:
    """The rewindfs settings of this process's environment, for a request."""
    return {k: v for k, v in os.environ.items() if is_setting(k)}


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
            isinstance(k, str) and is_setting(k) and isinstance(v, str)
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


MAX_ARGS, MAX_ENV = 4096, 4096


def check_cli(request: dict[str, Any]) -> dict[str, Any]:
    """A `rewind` command's request (resident.client.request), checked (its descriptors
    0-2 come with the go-ahead, to the child: resident.clichild)."""
    args, env = request.get("args"), request.get("env")
    if not isinstance(args, list) or len(args) > MAX_ARGS or not all(
            isinstance(a, str) and "\0" not in a for a in args):
        raise BadRequest("bad request: 'args' is not a list of strings")
    if not isinstance(env, dict) or len(env) > MAX_ENV or not all(
            isinstance(k, str) and isinstance(v, str) and k and "=" not in k
            and "\0" not in k + v for k, v in env.items()):
        raise BadRequest("bad request: 'env' is not an environment")
    umask = request.get("umask")
    if not isinstance(umask, int) or not 0 <= umask <= 0o777:
        raise BadRequest("bad request: 'umask' is not a umask")
    entry = request.get("entry", "cli")
    if entry not in ENTRIES:
        raise BadRequest("bad request: 'entry' is not 'cli' or 'hook'")
    return {"args": args, "env": env, "umask": umask, "cwd": _text(request, "cwd", path=True),
            "prog": _text(request, "prog"), "entry": entry}


ENTRIES = ("cli", "hook")   # what a served command runs: `rewind`, or an agent's hook


def checked_path(request: dict[str, Any], field: str) -> bytes:
    value = _text(request, field, path=True)
    if not value:
        raise BadRequest(f"bad request: {field!r} is empty")
    return os.fsencode(value)


def checked_int(request: dict[str, Any], field: str) -> int:
    value = request.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadRequest(f"bad request: {field!r} is not a count")
    return value


def checked_limits(request: dict[str, Any]) -> tuple[int, int]:
    value = request.get("limits")
    if not (isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
        raise BadRequest("bad request: 'limits' is not two counts")
    return value[0], value[1]


def checked_oid(request: dict[str, Any], field: str) -> bytes:
    value = request.get(field)
    if not (isinstance(value, str) and len(value) == 40
            and all(c in "0123456789abcdef" for c in value)):
        raise BadRequest(f"bad request: {field!r} is not an object id")
    return bytes.fromhex(value)


def checked_skipped(request: dict[str, Any]) -> dict[str, list[str]]:
    value = request.get("skipped", {})
    if not isinstance(value, dict) or len(value) > 16 or not all(
            isinstance(k, str) and isinstance(v, list)
            and all(isinstance(p, str) and len(p) <= MAX_TEXT for p in v)
            for k, v in value.items()):
        raise BadRequest("bad request: 'skipped' is not a map of path lists")
    return value
