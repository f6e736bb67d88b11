"""A test hook: a restore that stops after N files until a signal (REWIND_TEST_PAUSE_RESTORE).

Tests of killed restores must know the kill landed midway: a poller racing the
restore proves that only when it happens to be fast enough. With the variable set,
the restore (or undo, or revert) applies N actions, says so in one line on stderr,
and waits there until a signal ends it (SIGKILL) or interrupts it (SIGINT: the
restore's own interruption path then runs). Unset, it costs one comparison per file.
"""

from __future__ import annotations

import os
import signal

ENV = "REWIND_TEST_PAUSE_RESTORE"
PAUSED = "rewind: test pause"

_at: list[int | None] = []


def after(done: int) -> None:
    """Called after each action of a restore: pause here if this is the Nth."""
    if not _at:
        raw = os.environ.get(ENV, "")
        _at.append(int(raw) if raw.isdigit() and int(raw) > 0 else None)
    if done != _at[0]:
        return
    os.write(2, f"{PAUSED} after {done} file(s) ({ENV})\n".encode())
    while True:
        signal.pause()
