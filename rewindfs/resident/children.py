"""What the resident process's children do (resident.server forks one per request): settle a
hook's tool call, take a session's first capture (no checkpoint recorded) once its project
is watched, or run a `rewind` command for a client (resident.clichild). Each registers the
watch as its captures' change source (store.capture.changesource), asked through the parent.
"""

from __future__ import annotations

import os
import signal
import socket
from typing import Any

from rewindfs.hooks import hooklog
from rewindfs.hooks.helper import STOP_FOR_TESTS
from rewindfs.resident import wire

GO_SECONDS = 10.0     # for the client's go-ahead, once the child said who it is


def call_fields() -> int:
    from rewindfs.hooks.payloads import ToolCall

    return len(ToolCall.__slots__)


def register_source() -> None:
    """This child's captures ask the watch, through its parent."""
    from rewindfs.resident.source import Remote
    from rewindfs.store.capture import changesource

    changesource.register(Remote())


def hook(conn: socket.socket, request: dict[str, Any]) -> None:
    from rewindfs.hooks.helper import settle
    from rewindfs.hooks.payloads import ToolCall

    try:
        try:
            wire.send(conn, {"pid": os.getpid()})
            conn.settimeout(GO_SECONDS)
            go = wire.receive(conn)
        except OSError:   # the hook closed the connection: it went on without us
            go = None
        if not go or go.get("go") is not True:
            what = f"{request['call'][0]}: {request['reason']}"
            hooklog.write("helper", hooklog.SKIPPED,
                          f"request abandoned ({what}): the hook stopped waiting before "
                          "the helper took it on; nothing recorded")
            return
        # The checkpoint's settings are the hook's; PATH, HOME and the home are ours.
        for name in [k for k in os.environ if wire.is_setting(k)]:
            del os.environ[name]
        os.environ.update(request["env"])
        if request["env"].get(STOP_FOR_TESTS) == "1":   # a test hook: see STOP_FOR_TESTS
            os.kill(os.getpid(), signal.SIGSTOP)
        register_source()
        outcome = settle(ToolCall(*request["call"]), request["reason"], request["turn"],
                         request["root"])
        wire.send(conn, {"ok": True, "outcome": outcome})
    except BaseException as exc:  # noqa: BLE001 - the hook falls back and logs it
        try:
            wire.send(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        except OSError:
            pass


WARM_SECONDS = 120.0   # for the watch of a session's project to be in place


def warm(request: dict[str, Any]) -> None:
    """The project of a session that began: watched, then its checkpoint taken once the
    watch is in place (the capture the watch's next ones build on). A command of the
    session that comes meanwhile waits for it (the project lock): a "before" is a before."""
    import time

    from rewindfs.hooks import checkpoint
    from rewindfs.hooks.payloads import ToolCall
    from rewindfs.resident.source import ask

    try:
        for name in [k for k in os.environ if wire.is_setting(k)]:
            del os.environ[name]
        os.environ.update(request["env"])
        register_source()
        call = ToolCall(*request["call"])
        workdir = checkpoint.workdir_of(call)
        if workdir is None:
            return
        limits = checkpoint.limits()
        deadline = time.monotonic() + WARM_SECONDS
        found = ask({"kind": "status"}) or {}
        if any(p.get("root") == str(workdir) and p.get("state") in ("starting", "ready")
               for p in found.get("projects", [])):
            return   # watched already (a session's start and its first prompt both ask)
        ask({"kind": "watch", "workdir": str(workdir), "limits": list(limits)})
        while time.monotonic() < deadline:
            found = ask({"kind": "status"}) or {}
            states = {p.get("root"): p.get("state") for p in found.get("projects", [])}
            if states.get(str(workdir)) != "starting":
                break
            time.sleep(0.05)
        checkpoint.session_start(call, workdir)
    except BaseException as exc:  # noqa: BLE001 - no one to tell but the log
        hooklog.write("helper", hooklog.ERROR,
                      f"first capture of the session: {type(exc).__name__}: {exc}")


def cli(conn: socket.socket, request: dict[str, Any], listener: socket.socket) -> None:
    """Become the client's `rewind ARGS` and run it; its exit status goes back through
    the server, which reaps this process."""
    from rewindfs.resident import clichild

    clichild.run(conn, request, listener)
