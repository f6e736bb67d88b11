"""The automatic sweep: at most once per min_interval_hours, never on the checkpoint path.

`$base/.last_prune` (see marker) holds the epoch of the last automatic sweep, in
Hermes's format, so the two tools share one schedule. The agent API calls `start`
after a checkpoint: it costs the caller one thread start; the thread reads the
marker and, when a sweep is due, runs it in a detached child process (its own
session, so it finishes even if the agent exits, and its CPU and git children
never compete for the agent's GIL). The child takes a non-blocking lock (an flock
on the base directory) and reads the marker again, so agents starting at the
same moment run one sweep between them; it writes the marker before sweeping,
so a sweep that keeps failing is still tried only once per interval. A base
without a v2 store is swept too, as Hermes does (pre-v2 repositories, legacy
archives).

    python -m rewindfs.store.maintenance.auto --base DIR [--retention-days N] ...
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rewindfs.errors import Busy
from rewindfs.store.maintenance.sweep import Policy, Report, run
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.marker import due, last_run, mark

log = logging.getLogger(__name__)
LOG_NAME = "maintenance.log"
LOG_LIMIT = 1024 * 1024


def run_if_due(layout: Layout, policy: Policy, min_interval_hours: float) -> Report | None:
    """Sweep now if due and no other sweep is running; None when nothing ran.

    A base without a v2 store is swept too (its pre-v2 repositories and archives),
    as Hermes does.
    """
    if not layout.base.is_dir():
        return None
    try:
        with base_locked(layout):
            if not due(layout, min_interval_hours):
                return None
            previous = last_run(layout)
            mark(layout)
            return run(layout, policy, always_gc=False, last_sweep=previous)
    except Busy:
        return None


@contextmanager
def base_locked(layout: Layout) -> Iterator[None]:
    """An flock on the base directory itself (Busy if taken): a lock file in store/locks
    would create the store directory, which tells Hermes a v2 store exists already."""
    fd = os.open(layout.base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy("an automatic prune is running") from None
        yield
    finally:
        os.close(fd)


def running(layout: Layout) -> bool:
    """Whether an automatic sweep holds the base right now."""
    try:
        with base_locked(layout):
            return False
    except Busy:
        return True
    except OSError:
        return False


def start(layout: Layout, policy: Policy, min_interval_hours: float) -> threading.Thread:
    """Check the marker in a background thread and, if due, sweep in a detached process."""
    thread = threading.Thread(target=_check_and_spawn, args=(layout, policy, min_interval_hours),
                              name="rewindfs-auto-prune", daemon=True)
    thread.start()
    return thread


def _check_and_spawn(layout: Layout, policy: Policy, min_interval_hours: float) -> None:
    try:
        if not layout.base.is_dir() or not due(layout, min_interval_hours):
            return
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, *argv_for(layout, policy, min_interval_hours)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd="/", close_fds=True)
        child.wait()  # reaped here, so no zombie is left behind
    except Exception:  # noqa: BLE001 - maintenance must never disturb the agent
        log.debug("automatic prune not started", exc_info=True)


def argv_for(layout: Layout, policy: Policy, min_interval_hours: float) -> list[str]:
    return ["--base", str(layout.base), "--retention-days", str(policy.retention_days),
            "--max-size-mb", str(policy.max_total_size_mb),
            "--grace-minutes", str(policy.grace_minutes),
            "--min-interval-hours", str(min_interval_hours),
            "--delete-orphans" if policy.delete_orphans else "--keep-orphans"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rewindfs.store.maintenance.auto")
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--retention-days", type=float, default=Policy.retention_days)
    parser.add_argument("--max-size-mb", type=int, default=Policy.max_total_size_mb)
    parser.add_argument("--grace-minutes", type=float, default=Policy.grace_minutes)
    parser.add_argument("--min-interval-hours", type=float, default=24.0)
    orphans = parser.add_mutually_exclusive_group()
    orphans.add_argument("--delete-orphans", dest="delete_orphans", action="store_true",
                         default=True)
    orphans.add_argument("--keep-orphans", dest="delete_orphans", action="store_false")
    args = parser.parse_args(argv)
    layout = Layout(args.base)
    log_to_store(layout)
    policy = Policy(args.retention_days, args.delete_orphans, args.max_size_mb,
                    args.grace_minutes)
    try:
        report = run_if_due(layout, policy, args.min_interval_hours)
    except Exception:  # noqa: BLE001 - logged for whoever looks; nobody waits on us
        log.exception("automatic prune failed")
        return 1
    if report is not None:
        log.info("automatic prune: %s", report.to_dict())
    return 0


def log_to_store(layout: Layout) -> None:
    """Log to store/maintenance.log (started fresh when it grows past LOG_LIMIT)."""
    if layout.store.is_dir():
        private.log_to(layout.store / LOG_NAME, LOG_LIMIT)


if __name__ == "__main__":
    sys.exit(main())
