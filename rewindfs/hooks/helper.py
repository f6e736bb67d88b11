"""A resident helper that keeps the checkpoint code loaded, so a hook that must take a
checkpoint (or prove from the stamp that nothing changed) does not import pygit2 and the
store on every call.

The hook (hooks.entry) asks it over a Unix socket in ``rewind-hooks/`` (a 0700 directory;
the peer's uid is checked both ways). For each request the helper forks: the child, which
inherits everything already imported, does exactly what the hook would (`settle`, with the
hook's environment: the stamp's "nothing changed", else the checkpoint) and answers, so a
hook with a helper up imports neither the store nor pygit2; the helper itself opens
no repository, so it holds nothing stale and serves several agents at once. A helper of
another rewindfs (its code changed since it started, or another interpreter) answers
"stale" and exits. No helper, a stale one, or any failure: the hook takes the checkpoint
itself and starts a helper for the next call. It exits after ``REWIND_HOOK_HELPER_IDLE``
seconds (default 600) without a request; ``REWIND_HOOK_HELPER=0`` turns it off.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import Any

from rewindfs.hooks import hooklog

SOCKET, LOCK = "helper.sock", "helper.lock"
DEFAULT_IDLE = 600.0
MAX_REQUEST = 8 * 1024 * 1024
# What of the hook's environment the checkpoint may depend on (not the agent's secrets).
ENV_KEYS = ("HOME", "HERMES_HOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
            "XDG_CONFIG_HOME", "XDG_CACHE_HOME")


def enabled() -> bool:
    return os.environ.get("REWIND_HOOK_HELPER", "1") != "0"


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


def _address(folder_fd: int) -> str:
    # Through the directory's descriptor: a Unix socket path must stay under 108 bytes,
    # and a Hermes home can lie deeper than that.
    return f"/proc/self/fd/{folder_fd}/{SOCKET}"


def _peer_uid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def _send(sock: socket.socket, data: dict[str, Any]) -> None:
    sock.sendall(json.dumps(data).encode() + b"\n")


def _receive(sock: socket.socket) -> dict[str, Any] | None:
    chunks, size = [], 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n") or size > MAX_REQUEST:
            break
    try:
        data = json.loads(b"".join(chunks))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# -- the hook's side ------------------------------------------------------------------------

def ask(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """The helper's answer to `request`, or None when there is no usable helper."""
    folder = hooklog.hooks_dir()
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(_address(fd))
            if _peer_uid(sock) != os.getuid():
                return None
            _send(sock, {**request, "code": code_key(),
                         "env": {k: os.environ[k] for k in os.environ
                                 if k in ENV_KEYS or k.startswith("REWIND_")}})
            answer = _receive(sock)
    except OSError:
        return None
    finally:
        os.close(fd)
    return answer


def take(call: Any, reason: str, turn: str, root: str, timeout: float) -> dict[str, Any]:
    """What the hook's call comes to (`settle`): by the helper when one is up, else here
    (and after a checkpoint taken here, a helper is started for the next call)."""
    if enabled():
        answer = ask({"call": [getattr(call, f) for f in call.__slots__], "reason": reason,
                      "turn": turn, "root": root}, timeout)
        if answer is not None and answer.get("ok"):
            return {**answer["outcome"], "helper": True}
        if answer is not None and "error" in answer:
            raise HelperError(answer["error"])
    outcome = settle(call, reason, turn, root)
    if enabled() and not outcome.get("stamp"):
        start()
    return outcome


def settle(call: Any, reason: str, turn: str, root: str) -> dict[str, Any]:
    """In a project seen before (`root`), nothing changed since its newest checkpoint is
    answered from the stamp (no object read); else the checkpoint, of only the paths the
    stamp names when it names them."""
    found = None
    if root:
        from rewindfs.hooks import unchanged

        found = unchanged.changes(root)
        if found is not None and not found[2]:
            return unchanged.log_unchanged(root, f"{call.agent}:{call.call}", turn,
                                           found[0], found[1])
    from rewindfs.hooks import checkpoint

    return checkpoint.take(call, reason, turn, root, found)


class HelperError(Exception):
    """The helper's checkpoint failed (as it would have here): its error, for the log."""


def running(folder: Path | None = None) -> int | None:
    """The pid of the helper serving `folder` (default: this Hermes home's rewind-hooks),
    if one is running: it holds the lock file it wrote its pid into."""
    path = (folder or hooklog.hooks_dir()) / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def stop(folder: Path | None = None) -> None:
    """Ask the helper serving `folder` (as for `running`) to exit, if one runs."""
    pid = running(folder)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)


def start() -> None:
    """Start a helper in the background (it exits at once if one is running)."""
    # Imported here: its own imports (locale, selectors) would cost every hook call.
    import subprocess

    try:
        subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, cwd="/")
    except OSError:
        pass


# -- the helper's side ----------------------------------------------------------------------

def serve(idle: float) -> None:
    folder = hooklog.ensure_dir()
    lock = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return   # another helper serves this home
    os.ftruncate(lock, 0)   # no pid until it listens (running() says None till then)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.unlink(_address(fd))
    except FileNotFoundError:
        pass
    key = code_key()
    # Everything a checkpoint needs, imported once; each request's child inherits it.
    from rewindfs.hooks import checkpoint, unchanged  # noqa: F401
    from rewindfs.hooks.payloads import ToolCall

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        old = os.umask(0o077)
        try:
            server.bind(_address(fd))
        finally:
            os.umask(old)
        server.listen(16)
        server.settimeout(idle)
        me = os.getpid()
        os.write(lock, str(me).encode())
        while True:
            _reap()
            try:
                conn, _ = server.accept()
            except TimeoutError:
                break
            with conn:
                if _peer_uid(conn) != os.getuid():
                    continue
                if os.fork() == 0:
                    server.close()
                    os.close(lock)  # the lock is held as long as the helper lives, no longer
                    _answer(conn, key, ToolCall, me)
                    os._exit(0)
        try:
            os.unlink(_address(fd))
        except OSError:
            pass


def _answer(conn: socket.socket, key: str, tool_call, helper_pid: int) -> None:
    try:
        conn.settimeout(30)
        request = _receive(conn)
        if request is None:
            return
        if request.get("code") != key:
            _send(conn, {"ok": False, "stale": True})
            # The next hook starts a current one. Only while the helper is this child's
            # parent: once it is gone, the parent is whoever adopted the child (init, a
            # subreaper), and its pid may be anyone's.
            if os.getppid() == helper_pid:
                os.kill(helper_pid, signal.SIGTERM)
            return
        os.environ.clear()
        os.environ.update(request.get("env") or {})
        outcome = settle(tool_call(*request["call"]), request["reason"], request["turn"],
                         request.get("root") or "")
        _send(conn, {"ok": True, "outcome": outcome})
    except BaseException as exc:  # noqa: BLE001 - the hook falls back and logs it
        try:
            _send(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        except OSError:
            pass


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> int:
    try:
        idle = float(os.environ.get("REWIND_HOOK_HELPER_IDLE", DEFAULT_IDLE))
    except ValueError:
        idle = DEFAULT_IDLE
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(idle if idle > 0 else DEFAULT_IDLE)
    except Exception as exc:  # noqa: BLE001 - no one to tell but the log
        hooklog.write("helper", hooklog.ERROR, f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
