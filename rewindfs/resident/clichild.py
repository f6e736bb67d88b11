"""A `rewind` command run by a child of the resident process for a client (resident.client).

The child says who it is, waits for the client's go-ahead (a client that gave up first
runs the command itself, and this one runs nothing), then becomes the command as an exec
would have started it (resident.forked: the client's descriptors 0-2, working directory,
environment and umask; standard streams buffered as for those descriptors; Ctrl-C
handled as at the start of any `rewind`, or ignored when the client's was). It runs the
very same entry point (`rewindfs.cli.main`); the watch is its captures' change source
(store.capture.changesource); a pager is started by the client, whose terminal it needs
(`ClientPager`). It ends as the interpreter would; its exit status goes to the client
(from here, and from the server that reaps it, should it be killed first).
"""

from __future__ import annotations

import io
import os
import signal
import socket
import sys
from typing import Any

from rewindfs.resident import forked, wire

GO_SECONDS = 10.0


class ClientPager:
    """A pager the client runs on its terminal; this process writes into its stdin."""

    def __init__(self, conn: socket.socket, command: str, env: dict[str, str]):
        self.conn = conn
        wire.send(conn, {"pager": command, "env": env})
        answer, fds = wire.receive_with_fds(conn, fds=1)
        if answer is None or not answer.get("ok") or not fds:
            for fd in fds:
                os.close(fd)
            raise OSError("the client started no pager")
        self.stdin = os.fdopen(fds[0], "w", encoding="utf-8", errors="surrogateescape")

    def wait(self) -> int:
        wire.send(self.conn, {"pager_wait": True})
        answer = wire.receive(self.conn)
        code = answer.get("pager_exit") if answer else None
        return code if isinstance(code, int) else 1


def run(conn: socket.socket, request: dict[str, Any], listener: socket.socket) -> None:
    # A Ctrl-C the client forwards from now on waits until this process is the command,
    # its streams the client's: then it is answered as any `rewind` answers one.
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT,))
    fds: list[int] = []
    try:
        wire.send(conn, {"pid": os.getpid()})
        conn.settimeout(GO_SECONDS)
        go, fds = wire.receive_with_fds(conn)   # the client's 0-2 come with it
    except OSError:
        go = None
    if not go or go.get("go") is not True or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return   # the client runs it itself
    conn.settimeout(None)
    from rewindfs.resident import client

    client.inside = True   # its `rewind` is run here, not handed to a resident process
    forked.become(fds, request["cwd"], request["env"], request["umask"], [listener],
                  keep=[conn.fileno()])
    _streams()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from rewindfs.cli import interrupts

    hook = request.get("entry") == "hook"
    signal.signal(signal.SIGINT, signal.SIG_IGN if go.get("sigint_ignored") else
                  signal.default_int_handler if hook else interrupts.exit_at_once)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT,))
    from rewindfs.cli.output import term
    from rewindfs.resident.source import Remote
    from rewindfs.store.capture import changesource

    changesource.register(Remote())
    term.start_pager = lambda command, env: ClientPager(conn, command, env)
    prog, args = request["prog"], request["args"]
    sys.argv = [prog, *args]
    try:
        if hook:   # an agent's hook (resident.client.run_hook): its exit status
            from rewindfs.hooks import entry

            entry.tell_client = lambda answer: _said_at_deadline(conn, answer)
            code = entry.main(args)
        else:
            from rewindfs.cli import main

            main(args, prog)
            code = 0
    except SystemExit as exc:
        found = forked.exit_code(exc)
        if found is None:   # as the interpreter ends it: the message, status 1
            sys.stderr.write(f"{exc.code}\n")
            found = 1
        code = found
    forked.finish(code, lambda status: _said(conn, status))


def _said_at_deadline(conn: socket.socket, answer: str) -> None:
    try:
        wire.send(conn, {"deadline_answer": answer})
    except OSError:
        pass


def _said(conn: socket.socket, code: int) -> None:
    try:
        wire.send(conn, {"exit": code})
    except OSError:
        pass


def _streams() -> None:
    """stdin, stdout and stderr as Python makes them at start-up for these descriptors
    (the server's were made for /dev/null): line-buffered on a terminal, as an exec of
    `rewind` would have them."""
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    for name, fd, mode in (("stdin", 0, "rb"), ("stdout", 1, "wb"), ("stderr", 2, "wb")):
        try:
            raw = open(fd, mode, buffering=-1, closefd=False)  # noqa: SIM115
        except OSError:
            setattr(sys, name, None)
            continue
        stream = io.TextIOWrapper(
            raw, encoding=encoding, errors="backslashreplace" if fd == 2 else errors,
            line_buffering=fd == 2 or (fd == 1 and os.isatty(1)),
            write_through=unbuffered and fd != 0)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
