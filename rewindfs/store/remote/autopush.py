"""Pushing after checkpoints, by itself: batched, in the background, never in the way.

With `auto_push: NAME` in the config, every checkpoint taken calls `trigger`, which
appends the project's hash to `rewind-remotes/<NAME>.pending` and, unless a pusher
already runs, starts one from a thread (the checkpoint pays one thread start). The
pusher is a detached process (its own session: no terminal to prompt on, it outlives
a short-lived hook, and its git children never compete with the agent), like the
automatic prune sweep: it waits `delay` seconds so a burst of checkpoints makes one
push, takes the pending list, pushes those projects, and goes round again while more
came meanwhile. One pusher per remote (an flock); a trigger that finds it busy leaves
its project in the list, and a pusher re-reads the list after letting go of the lock,
so no checkpoint is left behind. A failed push is recorded (`rewind remote list`,
`rewind status`) and logged; its projects go back on the list for the next trigger.

    python -m rewindfs.store.remote.autopush --base DIR --remote NAME --delay S --timeout S
"""

from __future__ import annotations

import argparse
import atexit
import fcntl
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from rewindfs.errors import RewindError
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.remote.names import validate_name

log = logging.getLogger(__name__)
LOG_LIMIT = 256 * 1024
START_TIMEOUT = 5.0  # seconds an exiting process waits for its pusher to have started
STALL = 60.0  # store.remote.deadline.STALL (not imported: a checkpoint's import costs)


def pending_file(layout: Layout, name: str) -> Path:
    return layout.remotes_dir / f"{name}.pending"


def trigger(layout: Layout, name: str, h16: str, delay: float,
            stall: float = STALL) -> threading.Thread | None:
    """Queue project `h16` for remote `name` and make sure a pusher will take it. Never
    raises, never waits (a thread starts the pusher when none runs). `stall`: seconds a
    push may make no progress before it fails (remote_timeout): the pusher never holds
    the remote's lock longer than that on a remote that stopped answering."""
    try:
        private.append_text(pending_file(layout, name), h16 + "\n")
        thread = threading.Thread(target=_start_if_idle, args=(layout, name, delay, stall),
                                  name="rewindfs-auto-push", daemon=True)
        thread.start()
    except Exception:  # noqa: BLE001 - a push must never fail the checkpoint it follows
        log.debug("automatic push of %s not queued", h16, exc_info=True)
        return None
    # A short-lived caller (the CLI, an agent's hook) would otherwise exit before the
    # thread started the pusher: at exit, wait for that start (not for the push).
    atexit.register(thread.join, START_TIMEOUT)
    return thread


def _start_if_idle(layout: Layout, name: str, delay: float, stall: float) -> None:
    try:
        if running(layout, name):
            return  # it reads the list again before it exits
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, "--base", str(layout.base), "--remote", name,
             "--delay", str(delay), "--timeout", str(stall)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd="/", close_fds=True)
        child.wait()  # reaped here: no zombie (the pusher forks once more and exits)
    except Exception:  # noqa: BLE001 - pushing must never disturb the agent
        log.debug("automatic push not started", exc_info=True)


def running(layout: Layout, name: str) -> bool:
    fd = _lock_fd(layout, name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _lock_fd(layout: Layout, name: str) -> int:
    return private.open_file(layout.lock_file(f"autopush-{name}"), os.O_RDWR | os.O_CREAT)


def run(layout: Layout, name: str, delay: float, stall: float = STALL) -> int:
    """Push while there is something queued; returns how many rounds pushed."""
    rounds = 0
    while pending_file(layout, name).exists():
        fd = _lock_fd(layout, name)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return rounds  # another pusher has it
            while pending_file(layout, name).exists():
                time.sleep(delay)  # let a burst of checkpoints gather
                _round(layout, name, stall)
                rounds += 1
        finally:
            os.close(fd)  # then look once more: a trigger may have seen us busy
    return rounds


def _round(layout: Layout, name: str, stall: float) -> None:
    """One push of what is queued, and of what the last failed push left."""
    failed = pending_file(layout, name).with_suffix(".failed")
    projects = sorted(_take(pending_file(layout, name)) | _take(failed))
    if not projects:
        return
    # Here, not at the top: the starter waits until this process forked, and pygit2
    # takes longer to import than the rest of it.
    from rewindfs.store.objects.repo import Store
    from rewindfs.store.remote.pushing import push

    try:
        report = push(Store(layout), name, projects, interactive=False, stall=stall)
        log.info("pushed %d checkpoint(s) of %d project(s) to %s", report.checkpoints,
                 len(report.projects), name)
    except (RewindError, OSError) as exc:
        # Tried again with the next checkpoint's push, not in a loop now: a remote that
        # is down stays down for a while.
        log.warning("automatic push to %s failed: %s", name, exc)
        private.append_text(failed, "".join(h16 + "\n" for h16 in projects))


def _take(path: Path) -> set[str]:
    """The project hashes listed in `path`, which is gone afterwards (atomically taken)."""
    taken = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        os.rename(path, taken)
    except FileNotFoundError:
        return set()
    try:
        return {line.strip() for line in taken.read_text().splitlines()
                if len(line.strip()) == 16}
    finally:
        taken.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}")
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--remote", required=True)
    parser.add_argument("--delay", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=STALL)
    args = parser.parse_args(argv)
    layout = Layout(args.base)
    validate_name(args.remote)
    if os.fork():  # the starter reaps this parent at once; the pusher runs on alone
        return 0
    private.log_to(layout.remotes_dir / "autopush.log", LOG_LIMIT)
    try:
        run(layout, args.remote, max(0.0, args.delay), max(0.0, args.timeout))
    except Exception:  # noqa: BLE001 - logged for whoever looks; nobody waits on us
        log.exception("automatic push to %s failed", args.remote)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
