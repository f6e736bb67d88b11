"""A remote that accepts and never answers (issue 34, case 2): pushes and fetches end after
remote_timeout seconds without progress, in one line, recorded as failed; the background
pusher lets go of the remote's lock by then; `remote remove` never waits on it."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from remote_servers import Machine, wait_for

DEADLINE = 120.0  # seconds any command here may take (the stall limit is 2)


@contextmanager
def silent_server(lifetime: float = 300.0) -> Iterator[tuple[str, list[socket.socket]]]:
    """A TCP server on 127.0.0.1 that accepts every connection and never says a byte;
    it stops by itself after `lifetime` seconds, or when the block ends. Yields a git://
    URL on it and the connections it holds."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()
    end = time.monotonic() + lifetime

    def serve() -> None:
        while not stop.is_set() and time.monotonic() < end:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)
        for conn in held:
            conn.close()
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"git://127.0.0.1:{listener.getsockname()[1]}/r.git", held
    finally:
        stop.set()
        thread.join(10)


def project(root: Path) -> Path:
    app = root / "app"
    (app / ".git").mkdir(parents=True)
    (app / "f.txt").write_text("1\n")
    return app


def state(machine: Machine) -> dict:
    path = machine.store / "rewind-remotes" / "origin.state.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize("portable", ["", "proc,pidfd"], ids=["linux", "portable"])
def test_a_push_and_a_fetch_to_a_silent_remote_end_in_one_line(tmp_path: Path, portable: str):
    """Also without /proc and pidfds (REWIND_PORTABLE, the road to macOS): then only git's
    output counts as progress, and the silent server gives none."""
    a = Machine(tmp_path, "a")
    app = project(tmp_path)
    a.rewind("checkpoint", app)
    with silent_server() as (url, held):
        a.rewind("remote", "add", "origin", url)
        for args, what in ((("push", "origin", "-C", app), "push to origin"),
                           (("fetch", "origin"), "fetch from origin")):
            before = len(held)
            started = time.monotonic()
            done = a.rewind(*args, check=False, timeout=DEADLINE, REWIND_REMOTE_TIMEOUT="2",
                            REWIND_PORTABLE=portable)
            assert len(held) > before, "git never reached the silent server"
            assert done.returncode == 1, done.stderr
            assert done.stderr.strip() == (f"rewind: {what} failed: no progress for 2 s "
                                           "(remote_timeout)"), done.stderr
            assert time.monotonic() - started < DEADLINE
            assert state(a)[args[0]]["ok"] is False
        listed = a.rewind("remote", "list").stdout
        assert "FAILED" in listed and "never pushed" not in listed, listed


def test_the_background_pusher_lets_go_of_a_silent_remote(tmp_path: Path):
    """The automatic push hangs on the silent server, then fails and lets go of the lock:
    a manual push then runs (and fails on its own deadline), it does not wait for ever."""
    a = Machine(tmp_path, "a")
    app = project(tmp_path)
    env = {"REWIND_AUTO_PUSH": "origin", "REWIND_AUTO_PUSH_DELAY": "0",
           "REWIND_REMOTE_TIMEOUT": "3"}
    with silent_server() as (url, held):
        a.rewind("remote", "add", "origin", url)
        a.rewind("checkpoint", app, **env)
        wait_for("the automatic push at the silent server", lambda: held, timeout=60)
        wait_for("the automatic push to give up", lambda: "push" in state(a),
                 timeout=DEADLINE)
        assert state(a)["push"]["ok"] is False
        assert "no progress for 3 s" in state(a)["push"]["error"]
        log = a.store / "rewind-remotes" / "autopush.log"   # (written after the state)
        wait_for("the failure in the pusher's log", lambda: log.exists() and
                 "automatic push to origin failed" in log.read_text(), timeout=DEADLINE)
        manual = a.rewind("push", "origin", "-C", app, check=False, timeout=DEADLINE,
                          REWIND_REMOTE_TIMEOUT="2")
        assert "no progress for 2 s" in manual.stderr, manual.stderr


def test_remote_remove_never_waits_on_a_dead_remote(tmp_path: Path):
    """A push hangs on the silent server (a deadline of ten minutes); `remote remove`
    ends it at once, forgets the remote, and the push says why it ended."""
    a = Machine(tmp_path, "a")
    app = project(tmp_path)
    a.rewind("checkpoint", app)
    with silent_server() as (url, held):
        a.rewind("remote", "add", "origin", url)
        pushing = a.start("push", "origin", "-C", app, REWIND_REMOTE_TIMEOUT="600")
        wait_for("the push at the silent server", lambda: held, timeout=60)
        assert pushing.poll() is None  # hanging there
        started = time.monotonic()
        removed = a.rewind("remote", "remove", "origin", timeout=DEADLINE)
        assert "removed remote origin" in removed.stdout
        out, err = pushing.communicate(timeout=DEADLINE)
        assert time.monotonic() - started < DEADLINE
        assert pushing.returncode == 1
        assert err.strip() == "rewind: push to origin failed: remote origin was removed " \
                              "meanwhile", err
    assert "origin" not in a.rewind("remote", "list").stdout
    assert not (a.store / "rewind-remotes" / "origin.json").exists()
