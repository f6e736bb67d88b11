"""A resident helper that keeps the checkpoint code loaded, so a hook that must take a
checkpoint (or prove from the stamp that nothing changed) does not import pygit2 and the
store on every call.

The hook (hooks.entry) asks it over a Unix socket in ``rewind-hooks/`` (a folder of this
user's alone, hooklog.private_dir; the peer's uid is checked both ways). For each request
the helper forks: the child, which inherits everything already imported, does exactly
what the hook would (`settle`: the stamp's "nothing changed", else the checkpoint) and
answers, so a hook with a helper up imports neither the store nor pygit2; the helper
itself opens no repository, so it holds nothing stale and serves several agents at once.

A checkpoint is "before" only if it was recorded before the hook answered the agent:
the child first sends its pid and waits for the hook's go-ahead, and the hook, should
its deadline pass, kills that child and waits until it is gone (`abandon`). A helper that
does not take the request within START_SECONDS (stopped, swapped out) is left behind:
the hook closes the connection and takes the checkpoint itself, and the child, if one
ever reads that request, finds no go-ahead and records nothing.

The helper trusts no request (hooks.helperwire checks every field; a bad one is answered
with an error and the helper stays up), starts isolated from every project
(hooks.isolation: `python -I`, cwd /, an environment without the agent's keys), and
exits when its code is not the hook's (rewindfs changed since it started, another
interpreter: it answers "stale"), when any file it loaded changed on disk
(hooks.loaded: a replaced pygit2 `.so` too), or after ``REWIND_HOOK_HELPER_IDLE``
seconds (default 600) without a request. No helper, a stale one, or any failure: the
hook takes the checkpoint itself and starts a helper for the next call.
``REWIND_HOOK_HELPER=0`` turns it off, and so does REWIND_PORTABLE=fork (rewindfs.portable:
a child forked from a process that has loaded libgit2 is what macOS warns about). Without
pidfds (REWIND_PORTABLE=pidfd) the child is stopped by its pid, only while the connection
it holds shows it has not exited (`abandon`).
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewindfs import portable
from rewindfs.hooks import helperwire, hooklog
from rewindfs.hooks.deadline import TimeUp
from rewindfs.hooks.helperwire import (
    BadRequest,
    address,
    code_key,
    peer_uid,
    receive,
    send,
)

LOCK = "helper.lock"
DEFAULT_IDLE, MAX_IDLE = 600.0, 7 * 86400.0
START_SECONDS = 2.0   # for the helper to take a request on (it forks at once when it runs)
GO_SECONDS = 10.0     # for the hook's go-ahead, once the child said who it is
GONE_SECONDS = 5.0    # for a killed child to be gone
# A test hook: the child stops itself (SIGSTOP) once it has the go-ahead, before it
# captures anything, so a test knows a checkpoint is under way past the hook's deadline.
STOP_FOR_TESTS = "REWIND_TEST_STOP_HELPER_CHECKPOINT"
# The helper's child now working for this hook, for `abandon`: a pidfd, else (no pidfds)
# its pid and the connection it holds.
_child: int | None = None
_child_pid: tuple[int, socket.socket] | None = None


def enabled() -> bool:
    return os.environ.get("REWIND_HOOK_HELPER", "1") != "0" and portable.linux("fork")


# -- the hook's side ------------------------------------------------------------------------

def ask(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """The helper's answer to `request`, or None when no helper took it: none runs, it
    did not take the request on within START_SECONDS, or its child ended without an
    answer (then it is gone: nothing it started is recorded later). Past `timeout` (the
    hook's deadline) the child is stopped (`abandon`): {"abandoned": True}."""
    global _child, _child_pid
    folder = hooklog.hooks_dir()
    try:
        hooklog.private_dir(folder, create=False)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(min(timeout, START_SECONDS))
            where = address(fd, folder)
            if where is None:
                return None
            sock.connect(where)
            if peer_uid(sock) != os.getuid():
                return None
            send(sock, {**request, "code": code_key(), "home": str(hooklog.hermes_home()),
                        "env": helperwire.settings()})
            first = receive(sock)
            if first is None or not isinstance(first.get("pid"), int):
                return first
            if portable.linux("pidfd"):
                _child = os.pidfd_open(first["pid"])
            else:
                _child_pid = (first["pid"], sock)
            sock.settimeout(timeout)
            send(sock, {"go": True})
            try:
                answer = receive(sock)
            except TimeoutError:   # the hook's deadline: stopped before it recorded anything
                return {"abandoned": abandon()}
            if answer is None:
                abandon()
            return answer
    except OSError:   # a timeout included
        abandon()
        return None
    finally:
        os.close(fd)
        _forget_child()


def abandon() -> bool:
    """Stop the helper's child working for this hook, if one is, and wait (GONE_SECONDS
    at most) until it is gone: a checkpoint it has not recorded by now never is, so none
    named "before" is recorded after the hook answered. Called on the hook's deadline."""
    fd = _child
    if fd is None:
        return _abandon_by_pid()
    try:
        signal.pidfd_send_signal(fd, signal.SIGKILL)
    except ProcessLookupError:
        pass
    select.select([fd], [], [], GONE_SECONDS)   # readable once the process has exited
    return True


def _abandon_by_pid() -> bool:
    """`abandon` without a pidfd. The child holds its end of the connection until it
    exits (a process it forked may hold it longer): while the connection is open and the
    child has said nothing, it has not exited, so it has not been reaped and its pid is
    still its own; killed, then waited for until the connection closes."""
    held = _child_pid
    if held is None:
        return False
    pid, sock = held
    try:
        if select.select([sock], [], [], 0)[0]:
            return True   # it answered (what it recorded, it recorded before this) or exited
    except (OSError, ValueError):
        return True
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    select.select([sock], [], [], GONE_SECONDS)   # readable once its end is closed
    return True


def _forget_child() -> None:
    global _child, _child_pid
    fd, _child, _child_pid = _child, None, None
    if fd is not None:
        os.close(fd)


def take(call: Any, reason: str, turn: str, root: str, timeout: float,
         here: Callable[[], None] | None = None) -> dict[str, Any]:
    """What the hook's call comes to (`settle`): by the helper when one takes it on within
    `timeout` (TimeUp when it did not finish by then: its checkpoint was stopped), else
    here, `here()` called first (the hook's deadline armed for work that may get stuck);
    after a checkpoint taken here, a helper is started for the next call."""
    if enabled():
        fields = [getattr(call, f) for f in call.__slots__]
        fields[call.__slots__.index("command")] = fields[
            call.__slots__.index("command")][:helperwire.MAX_COMMAND]
        answer = ask({"call": fields, "reason": reason, "turn": turn, "root": root}, timeout)
        if answer is not None and answer.get("ok"):
            return {**answer["outcome"], "helper": True}
        if answer is not None and "abandoned" in answer:
            raise TimeUp("the helper's checkpoint was stopped before it was recorded")
        if answer is not None and "error" in answer:
            if not str(answer["error"]).startswith("bad request: "):
                raise HelperError(answer["error"])   # it failed there as it would here
            hooklog.write(call.agent, hooklog.ERROR, f"the helper refused the request "
                          f"({answer['error']}): the checkpoint is taken here")
    if here is not None:
        here()
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
            return unchanged.log_unchanged(root, call, reason, turn, found[0], found[1])
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
    """Start a helper in the background (it exits at once if one is running), isolated
    from the project as the hooks are (hooks.isolation.start_helper)."""
    from rewindfs.hooks.isolation import start_helper

    start_helper()


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
    where = address(fd, folder)
    if where is None:
        return   # a path too long for a socket, without /proc to shorten it
    try:
        os.unlink(where)
    except FileNotFoundError:
        pass
    key = code_key()
    # Everything a checkpoint needs, imported once; each request's child inherits it.
    from rewindfs.hooks import checkpoint, unchanged  # noqa: F401
    from rewindfs.hooks.loaded import Snapshot
    from rewindfs.hooks.payloads import ToolCall
    from rewindfs.store.history import redaction

    redaction.prepare()   # the redactor's patterns, compiled once for every child

    loaded = Snapshot()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        old = os.umask(0o077)
        try:
            server.bind(where)
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
                if peer_uid(conn) != os.getuid():
                    continue
                changed = loaded.changed()
                if changed is not None:   # the hook takes this one itself, then starts anew
                    hooklog.write("helper", hooklog.INFO,
                                  f"{changed} changed on disk since the helper started: exiting")
                    break
                if os.fork() == 0:
                    server.close()
                    os.close(lock)  # the lock is held as long as the helper lives, no longer
                    _answer(conn, key, ToolCall, me)
                    os._exit(0)
        try:
            os.unlink(where)
        except OSError:
            pass


def _answer(conn: socket.socket, key: str, tool_call, helper_pid: int) -> None:
    try:
        conn.settimeout(30)
        raw = receive(conn)
        if raw is None:
            raise BadRequest("bad request: not one JSON object on one line")
        if not isinstance(raw.get("code"), str):
            raise BadRequest("bad request: 'code' is not a string")
        if raw["code"] != key:
            send(conn, {"ok": False, "stale": True})
            # The next hook starts a current one. Only while the helper is this child's
            # parent: once it is gone, the parent is whoever adopted the child (init, a
            # subreaper), and its pid may be anyone's.
            if os.getppid() == helper_pid:
                os.kill(helper_pid, signal.SIGTERM)
            return
        request = helperwire.check(raw, len(tool_call.__slots__))
        if request["home"] != str(hooklog.hermes_home()):
            raise BadRequest("bad request: 'home' is not the Hermes home this helper serves")
        try:
            send(conn, {"pid": os.getpid()})
            conn.settimeout(GO_SECONDS)
            go = receive(conn)
        except OSError:   # the hook closed the connection: it went on without us
            go = None
        if not go or go.get("go") is not True:
            what = request["reason"] if "call" not in request else \
                f"{request['call'][0]}: {request['reason']}"
            hooklog.write("helper", hooklog.SKIPPED,
                          f"request abandoned ({what}): the hook stopped waiting before "
                          "the helper took it on; nothing recorded")
            return
        # The checkpoint's settings are the hook's; PATH, HOME and the home are ours.
        for name in [k for k in os.environ if helperwire.SETTING.fullmatch(k)]:
            del os.environ[name]
        os.environ.update(request["env"])
        if request["env"].get(STOP_FOR_TESTS) == "1":   # a test hook: see STOP_FOR_TESTS
            os.kill(os.getpid(), signal.SIGSTOP)
        outcome = settle(tool_call(*request["call"]), request["reason"], request["turn"],
                         request["root"])
        send(conn, {"ok": True, "outcome": outcome})
    except BaseException as exc:  # noqa: BLE001 - the hook falls back and logs it
        try:
            send(conn, {"ok": False, "error": str(exc) if isinstance(exc, BadRequest)
                        else f"{type(exc).__name__}: {exc}"})
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
    idle = hooklog.seconds("REWIND_HOOK_HELPER_IDLE", DEFAULT_IDLE, MAX_IDLE)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(idle)
    except Exception as exc:  # noqa: BLE001 - no one to tell but the log
        hooklog.write("helper", hooklog.ERROR, f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
