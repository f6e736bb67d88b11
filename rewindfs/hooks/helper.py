"""The hooks' side of the resident process (rewindfs.resident.server), which keeps the
checkpoint code loaded, so a hook that must take a checkpoint (or prove that nothing
changed) does not import pygit2 and the store on every call, and whose watch makes the
checkpoint cost what changed.

The hook asks it over its Unix socket (resident.wire: a folder of this user's alone, the
peer's uid checked both ways). The resident process forks a child per request that does
exactly what the hook would (`settle`) and answers.

A checkpoint is "before" only if it was recorded before the hook answered the agent:
the child first sends its pid and waits for the hook's go-ahead, and the hook, should
its deadline pass, kills that child and waits until it is gone (`abandon`). A resident
process that does not take the request within START_SECONDS (stopped, swapped out) is
left behind: the hook closes the connection and takes the checkpoint itself, and the
child, if one ever starts for that request, finds no go-ahead and records nothing.

No resident process, a stale one, or any failure: the hook takes the checkpoint itself
and starts one for the next call. ``REWIND_HOOK_HELPER=0`` turns it off for the hooks,
and so does REWIND_PORTABLE=fork (rewindfs.portable: a child forked from a process that
has loaded libgit2 is what macOS warns about). Without pidfds (REWIND_PORTABLE=pidfd)
the child is stopped by its pid, only while the connection it holds shows it has not
exited (`abandon`).
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
from rewindfs.hooks import hooklog
from rewindfs.hooks.deadline import TimeUp
from rewindfs.resident import wire as helperwire
from rewindfs.resident.wire import code_key, receive, send

LOCK = "helper.lock"
# A test hook: the helper's child (resident.children.hook, or a served hook's: `take`)
# stops itself (SIGSTOP) before it captures anything, so a test knows a checkpoint is
# under way past the hook's deadline.
STOP_FOR_TESTS = "REWIND_TEST_STOP_HELPER_CHECKPOINT"
START_SECONDS = 2.0   # for the helper to take a request on (it forks at once when it runs)
GONE_SECONDS = 5.0    # for a killed child to be gone
WARM_START_SECONDS = 2.0   # for a resident process started by a session's start to listen
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
    sock = helperwire.connect(min(timeout, START_SECONDS))
    if sock is None:
        return None
    try:
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
        sock.close()
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
    after a checkpoint taken here, a helper is started for the next call. A hook the
    resident process runs (resident.client.run_hook) is in the helper's child already."""
    from rewindfs.resident import client

    if enabled() and not client.inside:
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
    if client.inside and os.environ.get(STOP_FOR_TESTS) == "1":
        os.kill(os.getpid(), signal.SIGSTOP)   # a test's: see STOP_FOR_TESTS
    outcome = settle(call, reason, turn, root)
    if client.inside:   # a hook the resident process runs: settled by the helper after all
        return {**outcome, "helper": True}
    if enabled() and not outcome.get("stamp"):
        start()
    return outcome


def settle(call: Any, reason: str, turn: str, root: str) -> dict[str, Any]:
    """In a project seen before (`root`), nothing changed since its newest checkpoint is
    answered from the stamp (no object read); else the checkpoint, of only the paths the
    stamp names when it names them."""
    # A watch is registered only where its module was loaded (the resident process's
    # children): the hook's own process need not import the capture code to know.
    changesource = sys.modules.get("rewindfs.store.capture.changesource")
    found = None
    if root and not (changesource is not None and changesource.active()):  # (it is faster)
        from rewindfs.agent.classify.gitstate import destroys_git_state
        from rewindfs.hooks import unchanged

        found = unchanged.changes(root)
        # (a command that can destroy .git: the checkpoint records it, files changed or not)
        if found is not None and not found[2] and not destroys_git_state(
                call.command, helperwire.MAX_COMMAND):
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


def warm(call: Any) -> None:
    """An agent's session began (its first prompt): ask the resident process to watch the
    project and take its first capture in the background (resident.server), so the
    session's first command needs only what changed. Never waits for the checkpoint;
    with no resident process running, one is started and given WARM_START_SECONDS to
    listen (a prompt, not a tool call, waits that long at most, once)."""
    if not enabled():
        return
    sock = helperwire.connect(START_SECONDS / 4)
    if sock is None:
        start()
        import time

        deadline = time.monotonic() + WARM_START_SECONDS
        while sock is None and time.monotonic() < deadline:
            time.sleep(0.05)
            sock = helperwire.connect(START_SECONDS / 4)
        if sock is None:
            return
    try:
        sock.settimeout(START_SECONDS)
        fields = [getattr(call, f) for f in call.__slots__]
        fields[call.__slots__.index("command")] = ""
        send(sock, {"kind": "warm", "call": fields, "reason": "", "turn": call.turn,
                    "root": "", "code": code_key(), "home": str(hooklog.hermes_home()),
                    "env": helperwire.settings()})
        receive(sock)
    except OSError:
        pass
    finally:
        sock.close()
