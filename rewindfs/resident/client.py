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


def run_hook(args: list[str]) -> int | None:
    """The agents' hook (`python -m rewindfs.hooks AGENT`: hooks.entry, payload on stdin)
    run by the resident process as `rewind` commands are: its exit status, or None when it
    runs here (REWIND_HOOK_HELPER=0, no resident process, one that does not take it on).
    The child keeps the hook's deadline itself (hooks.entry); should it not be done
    GRACE_SECONDS after it (stopped, stuck), it is killed before this process answers,
    so nothing it would have recorded comes after the agent went on."""
    if inside or os.environ.get("REWIND_HOOK_HELPER", "1") == "0":
        return None
    from rewindfs import portable

    # Only as the installed hooks run it, `python -I` (the resident process's start-up too:
    # the agent's PYTHON* settings are nobody's).
    if not portable.linux("fork") or not sys.flags.isolated:
        return None
    from rewindfs.hooks import hooklog
    from rewindfs.resident import wire

    limit = hooklog.seconds("REWIND_HOOK_TIMEOUT", hooklog.HOOK_SECONDS,
                            hooklog.MAX_HOOK_SECONDS) + GRACE_SECONDS
    sock = wire.connect(min(limit, START_SECONDS))
    if sock is None:
        return None   # (the hook starts one once it has taken a checkpoint itself)
    try:
        return _served(sock, args, "rewind-hook", entry="hook", limit=limit)
    except _Here:
        return None
    finally:
        sock.close()


GRACE_SECONDS = 2.0   # past a served hook's own deadline, before its child is killed


def _served(sock: socket.socket, args: list[str], prog: str, entry: str = "cli",
            limit: float | None = None) -> int:
    from rewindfs.resident import wire

    umask = os.umask(0o022)
    os.umask(umask)
    try:
        request = {"kind": "cli", "code": wire.code_key(), "args": args, "prog": prog,
                   "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
                   "entry": entry}
        wire.send(sock, request)
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
        # The descriptors go to the child alone, with the go-ahead: sent with the request,
        # they would wait in the socket of a resident process that does not answer
        # (stopped), keeping the client's pipes open after it gave up and ran it itself.
        wire.send_with_fds(sock, {"go": True, "sigint_ignored": ignored}, [0, 1, 2])
    except OSError:
        raise _Here from None
    sock.settimeout(None)
    _forward(child, ignored)
    return _until_exit(sock, child, args[0] if entry == "hook" and args else "-", limit)


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


def _until_exit(sock: socket.socket, child: int, agent: str, limit: float | None) -> int:
    """The command's exit status; a hook's child not done within `limit` seconds (all
    its messages' waits together) is killed (`_killed`)."""
    import time

    from rewindfs.resident import wire

    end = None if limit is None else time.monotonic() + limit
    pager, answer = None, None
    try:
        while True:
            try:
                if end is not None:
                    sock.settimeout(max(end - time.monotonic(), 0.001))
                message = wire.receive(sock)
            except TimeoutError:   # a hook's child past its deadline: gone before we go on
                return _killed(child, agent, answer)
            except OSError:
                message = None
            if message is None:
                sys.stderr.write("rewind: the resident process stopped before the command "
                                 "finished; run it again\n")
                return 1
            if "exit" in message:
                code = message["exit"]
                return code if isinstance(code, int) else 1
            if "deadline_answer" in message:   # what a hook answers, should it not finish
                answer = message["deadline_answer"]
            elif "pager" in message:
                pager = _pager(sock, message)
            elif "pager_wait" in message:
                code = pager.wait() if pager is not None else 0
                pager = None
                wire.send(sock, {"pager_exit": code})
    finally:
        if pager is not None:   # the command ended without waiting for it: we do
            pager.wait()


def _killed(child: int, agent: str, answer: object) -> int:
    """A served hook's child that did not end by its deadline, killed and waited for
    (nothing it would record can come after the hook answers); said in the hook's log.
    The agent gets the answer the child said it would give then (hooks.entry.tell_client:
    what was not protected, in the agent's protocol), else the one its protocol needs to go
    on (Cursor's allow)."""
    import time

    from rewindfs.hooks import hooklog

    try:
        os.kill(child, _signal.SIGKILL)
    except ProcessLookupError:
        pass
    # A child of the resident process, not ours to reap: gone once its /proc entry is
    # (a zombie's state is Z).
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            with open(f"/proc/{child}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
        except (OSError, IndexError):
            break
        time.sleep(0.005)
    seconds = hooklog.seconds("REWIND_HOOK_TIMEOUT", hooklog.HOOK_SECONDS,
                              hooklog.MAX_HOOK_SECONDS)
    hooklog.write(agent, hooklog.SKIPPED, f"the hook did not finish within {seconds:g}s "
                  "(REWIND_HOOK_TIMEOUT): skipped; the helper's checkpoint was stopped "
                  "before it was recorded")
    if not isinstance(answer, str) and agent == "cursor":
        from rewindfs.hooks.payloads import CURSOR_ALLOW

        answer = CURSOR_ALLOW
    if isinstance(answer, str) and answer:
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    return 0


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
