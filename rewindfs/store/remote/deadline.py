"""A push or fetch that makes no progress is ended: git and everything it started.

A remote can accept a connection and never answer (a hung server, a firewall that
drops packets, an attacker's silent listener): git then waits for ever, and with it
the remote's lock, the automatic pusher and every `rewind push`, `fetch` and `remote
remove` behind them. So git runs watched: progress is anything its processes (git, the
ssh or https helper, pack-objects, index-pack) do, read from /proc: bytes read or
written, CPU time used, a process started or ended, output. When none of that happens
for `stall` seconds (the `remote_timeout` setting, default 60), every one of them is
killed and the operation fails in one line. A password prompt on the terminal (a
process of the tree holding /dev/tty open) is a wait on a person, not a stall.

Without /proc (not Linux) only output counts, and a process that prints nothing is
ended `stall` seconds after it started: set remote_timeout to 0 there to wait for ever.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable

from rewindfs import portable

STALL = 60.0  # seconds without progress (config: remote_timeout; 0: no deadline)
POLL = 0.25  # seconds between two looks at the processes


class Stalled(Exception):
    """git made no progress for the whole deadline, or was told to stop (`why`)."""


def watch(proc: subprocess.Popen, stall: float, output: Callable[[], int],
          stop: Callable[[], str | None] | None = None) -> None:
    """Wait for `proc` to end; raise Stalled (the processes killed) when it and its
    descendants made no progress for `stall` seconds (0: never), or when `stop()`
    names a reason to stop. `output()`: bytes of git's output read so far."""
    last = None
    quiet_since = time.monotonic()
    poll = min(POLL, stall / 8) if stall > 0 else POLL
    with _ExitWaiter(proc) as ended:
        while not ended(poll):
            why = stop() if stop is not None else None
            if why is not None:
                kill_tree(proc.pid)
                raise Stalled(why)
            if stall <= 0:
                continue
            state, on_tty = progress(proc.pid)
            now = time.monotonic()
            mark = (state, output())
            if mark != last or on_tty:
                last, quiet_since = mark, now
            elif now - quiet_since >= stall:
                kill_tree(proc.pid)
                raise Stalled(f"no progress for {stall:g} s (remote_timeout)")
    proc.wait()


class _ExitWaiter:
    """`ended(timeout)`: True as soon as the process has exited (a pidfd wakes the wait
    at once: a push of 70 ms must not wait for a polling interval), else after
    `timeout` seconds, False."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.fd: int | None = None

    def __enter__(self) -> Callable[[float], bool]:
        if not portable.linux("pidfd"):
            return self.ended  # no pidfds: Popen.wait polls
        try:
            self.fd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            self.fd = None
        return self.ended

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def ended(self, timeout: float) -> bool:
        if self.fd is None:
            try:
                self.proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        return bool(select.select([self.fd], [], [], timeout)[0])


def progress(pid: int) -> tuple[tuple, bool]:
    """What the processes under `pid` have done so far (any change is progress), and
    whether one of them holds the terminal (a prompt: a person is typing)."""
    if not portable.linux("proc"):
        return (), False  # only output counts (the module's docstring)
    done = []
    on_tty = False
    for child in tree(pid):
        done.append((child, _read(f"/proc/{child}/io"),  # not ssh's (it is not dumpable)
                     _read(f"/proc/{child}/stat").rsplit(b")", 1)[-1].split()[11:13]))
        on_tty = on_tty or _holds_tty(child)
    return tuple(done), on_tty


def tree(pid: int) -> list[int]:
    """`pid` and its descendants, parents first (without /proc: `pid` alone)."""
    if not portable.linux("proc"):
        return [pid]
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo += _children(current)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL to `pid` and every descendant (none may go on talking to the remote)."""
    for child in reversed(tree(pid)):
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as fh:
                found += [int(n) for n in fh.read().split()]
    except (OSError, ValueError):
        pass
    return found


def _holds_tty(pid: int) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/tty":
                return True
        except OSError:
            continue
    return False
