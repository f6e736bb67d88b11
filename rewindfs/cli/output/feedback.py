"""Feedback while long work runs: capture and restore progress, waits on another process.

Each helper hooks one of the store's reporting points (capture.reporting_progress,
apply.reporting_progress, locks.reporting_waits) to a display on the terminal's
stderr; without a terminal they do nothing, so scripts stay quiet.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rewindfs.cli.output.human import visible

if TYPE_CHECKING:
    from rewindfs.cli.output.term import Terminal
    from rewindfs.store.capture import Progress


@contextmanager
def capture_progress(term: Terminal, description: str = "capturing") -> Iterator[None]:
    """Files and bytes found (while scanning), then captured out of their totals.

    The capture reports a `Progress` (files, bytes, and the totals once known).
    """
    if not sys.stderr.isatty():
        yield
        return
    from rewindfs.store.capture import reporting_progress

    with term.progress(description, unit="files") as update:

        def report(p: Progress) -> None:
            update(p.files, p.files_total, p.bytes, p.bytes_total)

        with reporting_progress(report, detailed=True):
            yield


@contextmanager
def restore_progress(term: Terminal) -> Iterator[None]:
    """Files written or deleted out of the plan's total, with bytes written and rates."""
    if not sys.stderr.isatty():
        yield
        return
    from rewindfs.restore.apply import reporting_progress as reporting_restore

    with term.progress("restoring", unit="files") as update:

        def report(done: int, total: int, written: int) -> None:
            update(done, total, written, None)

        with reporting_restore(report), capture_progress(term, "saving current state"):
            yield


@contextmanager
def lock_waits(term: Terminal, verbs: Collection[str], verb: str | None) -> Iterator[None]:
    """`waiting for process 1234 (rewind checkpoint) to finish with this project...` while
    another process holds the project (or store) lock; `verbs` are rewind's commands,
    `verb` this one's (what this process says it is doing, to whoever waits for it)."""
    from rewindfs.store.objects import locks

    if verb:
        locks.acting_as(f"rewind {verb}")

    def notice(path: Path, pid: int | None):
        what = "the store" if path.stem == "store" else "this project"
        found = locks.holder_of(path)
        doing = f" ({found[1]})" if found and found[0] == pid and found[1] else None
        who = f"process {pid}{doing or _command(pid, verbs)}" if pid else "another process"
        return term.waiting(f"waiting for {visible(who)} to finish with {what}...")

    with locks.reporting_waits(notice):
        yield


def _command(pid: int, verbs: Collection[str]) -> str:
    """` (rewind checkpoint)` or ` (python3)`: what the process is, from its command line
    (/proc; ps(1) off Linux or with REWIND_PORTABLE=proc, its words split at spaces)."""
    from rewindfs import portable

    if portable.linux("proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [os.fsdecode(a) for a in f.read().split(b"\0") if a]
        except OSError:
            return ""
    else:
        import subprocess

        try:
            args = subprocess.run(["ps", "-ww", "-o", "args=", "-p", str(pid)],
                                  capture_output=True, text=True, timeout=2).stdout.split()
        except (OSError, subprocess.SubprocessError):
            return ""
    if not args:
        return ""
    names = [os.path.basename(a) for a in args]
    ours = "rewind" in names or any(a.startswith("rewindfs") for a in args)
    if not ours:
        return f" ({names[0]})"
    verb = next((a for a in args if a in verbs), None)
    return f" (rewind {verb})" if verb else " (rewind)"
