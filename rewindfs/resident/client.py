"""`rewind` as a client of the resident process: the command runs in a child of a process
that has everything imported (Mercurial's chg is the model), so it answers in tens of
milliseconds instead of paying Python's imports first.

The client hands the resident process its descriptors 0-2, arguments, working directory,
environment and umask (resident.clichild becomes that command), forwards the signals a
terminal or a parent sends it (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT, the window size; Ctrl-Z
stops the command and then the client, `fg` continues both), runs a pager the command
asks for on its own terminal, and exits with the command's status.

The command runs in this process instead (`run` returns None) whenever it cannot be
served as it would run here: `REWIND_NO_SERVER=1`; no resident process (one is started
for the next command); one that does not answer within START_SECONDS, runs other code
(answered "stale": it exits, and the next command starts a current one) or another
Python start-up environment (resident.forked.startup_env); commands that need this
process's own terminal or run for long (`ui`, `mount`, `mcp`) or talk to remotes, whose
credential prompts need a terminal (`push`, `fetch`, `remote`); a descriptor 0-2 closed.
A resident process that stops while it runs a command (killed) is said in one line, exit
status 1; the next command starts a new one.

Only what connecting needs is imported here (tests/cli/test_cli_imports.py).
"""

from __future__ import annotations

import _signal
import os
import sys

TYPE_CHECKING = False  # (typing, socket, signal: their enums cost more than the command)
if TYPE_CHECKING:
    import socket

START_SECONDS = 2.0    # for the resident process to say which child runs the command
NOT_SERVED = frozenset({"ui", "mount", "mcp", "push", "fetch", "remote"})
GLOBAL_VALUES = frozenset({"--home", "--color"})   # the group's options taking a value
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT,
             _signal.SIGWINCH, _signal.SIGUSR1, _signal.SIGUSR2)

inside = False   # this process is a resident process's child running a command


def command_of(args: list[str]) -> str | None:
    """The command `args` name (after the group's options), None when none does."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in GLOBAL_VALUES:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return arg
    return None


def run(args: list[str], prog: str) -> int | None:
    """Run `prog ARGS` in the resident process: its exit status, or None when it runs here."""
    if inside or os.environ.get("REWIND_NO_SERVER") == "1" \
            or command_of(args) in NOT_SERVED:
        return None
    from rewindfs import portable

    if not portable.linux("fork"):
        return None
    from rewindfs.resident import wire

    sock = wire.connect(START_SECONDS)
    if sock is None:
        _start()
        return None
    try:
        return _served(sock, args, prog)
    except _Here:
        return None
    finally:
        sock.close()


class _Here(Exception):
    """Run it in this process after all."""


def _served(sock: socket.socket, args: list[str], prog: str) -> int:
    from rewindfs.resident import wire

    umask = os.umask(0o022)
    os.umask(umask)
    try:
        request = {"kind": "cli", "code": wire.code_key(), "args": args, "prog": prog,
                   "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}
        wire.send_with_fds(sock, request, [0, 1, 2])
        first = wire.receive(sock)
    except OSError:   # a closed descriptor, a working directory gone, a timeout
        raise _Here from None
    if first is None or not isinstance(first.get("pid"), int):
        if first is not None and first.get("stale"):
            _start()
        raise _Here
    child = first["pid"]
    ignored = _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN
    try:
        wire.send(sock, {"go": True, "sigint_ignored": ignored})
    except OSError:
        raise _Here from None
    sock.settimeout(None)
    _forward(child, ignored)
    return _until_exit(sock)


def _forward(child: int, sigint_ignored: bool) -> None:
    def send(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    def stop(_signum: int, _frame: object) -> None:   # Ctrl-Z: the command, then us
        send(_signal.SIGTSTP, None)
        _signal.signal(_signal.SIGTSTP, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGTSTP)
        _signal.signal(_signal.SIGTSTP, stop)   # continued (fg): the command too
        send(_signal.SIGCONT, None)

    for signum in FORWARDED:
        if signum != _signal.SIGINT or not sigint_ignored:
            _signal.signal(signum, send)
    _signal.signal(_signal.SIGTSTP, stop)
    _signal.signal(_signal.SIGCONT, send)


def _until_exit(sock: socket.socket) -> int:
    from rewindfs.resident import wire

    pager = None
    try:
        while True:
            try:
                message = wire.receive(sock)
            except OSError:
                message = None
            if message is None:
                sys.stderr.write("rewind: the resident process stopped before the command "
                                 "finished; run it again\n")
                return 1
            if "exit" in message:
                code = message["exit"]
                return code if isinstance(code, int) else 1
            if "pager" in message:
                pager = _pager(sock, message)
            elif "pager_wait" in message:
                code = pager.wait() if pager is not None else 0
                pager = None
                wire.send(sock, {"pager_exit": code})
    finally:
        if pager is not None:   # the command ended without waiting for it: we do
            pager.wait()


def _pager(sock: socket.socket, message: dict):
    """Start the pager the command asked for on this terminal; hand it the pipe's end."""
    import subprocess

    from rewindfs.resident import wire

    command, env = message.get("pager"), message.get("env")
    if not isinstance(command, str) or not isinstance(env, dict):
        wire.send(sock, {"ok": False})
        return None
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(command, shell=True, stdin=read, env=env)
    except OSError:
        os.close(read)
        os.close(write)
        wire.send(sock, {"ok": False})
        return None
    os.close(read)
    try:
        wire.send_with_fds(sock, {"ok": True}, [write])
    finally:
        os.close(write)   # the pager sees the end of its input once the command closes its end
    return proc


def _start() -> None:
    """A resident process for the next command (it exits at once if one runs)."""
    from rewindfs.hooks.isolation import start_helper

    start_helper()
