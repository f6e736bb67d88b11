"""A bound on how long one `rewind` command may be stuck inside a call that never returns.

A libgit2 call that never returns (issue 10: a truncated loose object in stock
libgit2) may hold the GIL, so no Python thread of the stuck process can run, not even
a signal handler: Ctrl-C is ignored and the process spins forever. Or it may release
it (a cffi call, a read from a hung network filesystem), and then only the main
thread is stuck. rewindfs fixes the known cause at the root (patches/libgit2,
store.objects.odbguard); this is the backstop for unknown ones, and it must work
without the GIL:

* A thread of the command writes a heartbeat byte every second (an eighth of the limit
  below, when that is shorter: a short limit still leaves room for several late beats
  on a loaded machine), but only when the command got somewhere since the last one
  (store.objects.liveness): work was counted (every long loop's interrupt poll
  counts), its main thread used CPU (it runs, it is not parked in one call that waits
  forever), or the command waits on purpose (a lock another process holds, a prompt,
  the pager, git's gc). The beats stop when the GIL is held, and when the main thread
  sits in a call without any of that.
* A small helper, forked before the command starts, waits for the beats. After
  `REWIND_STALL_SECONDS` (default 120) without one, while the command is not
  stopped (Ctrl-Z), it prints one line and sends SIGQUIT.
* SIGQUIT's handler in the command's process is libc's `_exit` itself: a C
  function, async-signal-safe, that gets the signal number (3) as its argument. So
  the stuck process exits at once, with status 3 (store damaged), GIL or not.

Ctrl-C while stuck: the helper ignores SIGINT, but notices it; when no heartbeat
follows within two beats (2 seconds) it ends the command the same way (exit 3, saying
so). A beat sent after the Ctrl-C (progress made since) clears it: the command handled
or ignored it (the pager's way) and goes on, and is judged by the stall limit again.
The helper watches the command through a pidfd opened before the fork, so it can
never watch (or signal) another process that reused the pid, and exits as soon as
the command does. Without pidfds (off Linux, or REWIND_PORTABLE=pidfd) it watches its
parent: while its parent is still the command, the command has not exited and its pid
is its own (an orphan is adopted by another process at once); without /proc
(REWIND_PORTABLE=proc) ps(1) tells a stopped command. A held flock is released by the
kernel on exit; git lock files a killed writer leaves are cleared by the next writer
(store.objects.locks).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import threading
import time

from rewindfs import portable
from rewindfs.store.objects import liveness

ENV = liveness.ENV
BEAT_SECONDS = 1.0  # at most; an eighth of a shorter limit (beat_seconds)
BEATS_PER_LIMIT = 8
GRACE_BEATS = 2  # after a Ctrl-C, beats the helper waits for before ending the command


def stall_seconds() -> float:
    return liveness.stall_seconds()


def beat_seconds(limit: float) -> float:
    """The heartbeat's period for a stall limit of `limit` seconds."""
    return min(BEAT_SECONDS, limit / BEATS_PER_LIMIT)


def start() -> None:
    """Watch this process from a forked helper (call before any thread or lock exists)."""
    limit = stall_seconds()
    if limit <= 0 or signal.SIGQUIT != 3:
        return
    if not _exit_on_sigquit():
        return
    pidfd = None
    if portable.linux("pidfd"):
        try:
            pidfd = os.pidfd_open(os.getpid())  # before the fork: no window for pid reuse
        except OSError:
            return
    read_end, write_end = os.pipe()
    # A Ctrl-C in the instant between fork and the helper's handler must neither kill the
    # helper nor be lost: blocked across the fork, delivered once each side is ready.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if pidfd is not None:
            os.close(pidfd)
        return
    if pid == 0:
        code = 0
        try:
            os.close(write_end)
            _watch(pidfd, read_end, limit)
        except BaseException:
            code = 1
        os._exit(code)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if pidfd is not None:
        os.close(pidfd)
    os.close(read_end)
    threading.Thread(target=_beat, name="rewind-heartbeat", daemon=True,
                     args=(write_end, threading.main_thread().ident, beat_seconds(limit))
                     ).start()


def _exit_on_sigquit() -> bool:
    """Make SIGQUIT end this process with status 3 without running any Python code."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        handler = ctypes.cast(libc._exit, ctypes.c_void_p).value
        return libc.signal(signal.SIGQUIT, handler) != ctypes.c_void_p(-1).value
    except (OSError, AttributeError):
        return False


def _beat(fd: int, main: int | None, period: float) -> None:
    last = None
    while True:
        now = _position(main)
        if now != last or liveness.waiting():
            try:
                os.write(fd, b".")
            except OSError:
                return  # the helper is gone: nothing to tell
        last = now
        time.sleep(period)


def _position(main: int | None) -> tuple[int, int]:
    """How far the command got: work counted, and the CPU time its main thread used
    (which stays still while it sits in a call that waits and never returns)."""
    try:
        cpu = time.clock_gettime_ns(time.pthread_getcpuclockid(main)) if main else 0
    except (OSError, AttributeError):  # the main thread is gone: the process is exiting
        cpu = 0
    return liveness.ticks(), cpu


def _watch(pidfd: int | None, beats: int, limit: float) -> None:
    """The helper: end the command when it stops beating, or ignores Ctrl-C while stuck."""
    period = beat_seconds(limit)
    interrupted: list[float] = []
    signal.signal(signal.SIGINT, lambda *_: interrupted.append(time.monotonic()))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _quiet_stdio()
    parent = os.getppid()
    poller = select.poll()
    poller.register(beats, select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    last = time.monotonic()
    while True:
        try:
            events = dict(poller.poll(1000 * period))
        except InterruptedError:
            events = {}
        if pidfd in events or pidfd is None and os.getppid() != parent:
            return  # the command ended
        if beats in events:
            if not os.read(beats, 4096):
                return
            last = time.monotonic()
            # A beat sent after a Ctrl-C shows progress made since: the command goes on
            # (it handled or ignored the interrupt). One that may have been sent just
            # before it arrived (within a beat) proves nothing.
            if interrupted and last - interrupted[-1] > period * 1.5:
                interrupted.clear()
            continue
        now = time.monotonic()
        if _stopped(parent):
            last = now  # Ctrl-Z: not stuck, just paused
            continue
        if interrupted and now - max(interrupted[0], last) >= GRACE_BEATS * period:
            _end(pidfd, parent, "interrupted while stuck inside libgit2 (a damaged store?); "
                        "run `rewind check`")
            return
        if now - last >= limit:
            _end(pidfd, parent, f"no progress for {int(now - last)} s inside libgit2 (a damaged "
                        f"store?); stopped. Run `rewind check` ({ENV} sets this limit)")
            return


def _end(pidfd: int | None, parent: int, message: str) -> None:
    if pidfd is None and os.getppid() != parent:
        return   # the command has exited: its pid may be another process's by now
    with contextlib.suppress(OSError):
        os.write(2, f"rewind: {message}\n".encode())
    with contextlib.suppress(OSError):
        if pidfd is None:
            os.kill(parent, signal.SIGQUIT)
        else:
            signal.pidfd_send_signal(pidfd, signal.SIGQUIT)


def _stopped(pid: int) -> bool:
    if not portable.linux("proc"):
        import subprocess

        try:
            state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                                   timeout=5).stdout.strip()[:1]
        except (OSError, subprocess.SubprocessError):
            return False
        return state in (b"T", b"t")
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"T", b"t")


def _quiet_stdio() -> None:
    """The helper keeps stderr (for its one line) and lets go of stdin and stdout, so a
    reader of the command's output sees it end when the command ends."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
