"""An agent's checkpoint, bounded in time whatever happens: run on a thread of its own,
waited for only while it makes progress.

`ensure_checkpoint` runs before an agent's tool call, inside the agent's own process,
so it must never block it: not on a store spinning in libgit2, a read from a hung
network filesystem, a forked helper that never answers, or a lock another process
holds for minutes. None of those can be interrupted from Python, so the work runs
on a worker thread, and the caller waits while the work advances (the interrupt poll
of every long loop counts, store.capture.interrupts) and gives up after `stall`
seconds without progress or `limit` seconds in all. Giving up cancels the work: its
next poll stops it, and since every capture polls after its last read, a checkpoint
given up on is never recorded later with files the tool has changed meanwhile. A
worker stuck for good stays behind (a daemon thread); while it lives, the same
directory is not tried again (`busy`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from rewindfs.store.capture import interrupts

T = TypeVar("T")
STALL_SECONDS = 30.0  # without progress (the first walk of a huge tree polls rarely)
LIMIT_SECONDS = 600.0  # in all, however fast it progresses
POLL_SECONDS = 0.1


class GaveUp(Exception):
    """The work made no progress in time (or took too long): it is being cancelled."""


class Runner:
    """Runs bounded work, one worker per key at a time."""

    def __init__(self, stall: float = STALL_SECONDS, limit: float = LIMIT_SECONDS):
        self.stall = stall
        self.limit = limit
        self._workers: dict[str, threading.Thread] = {}
        self._guard = threading.Lock()

    def busy(self, key: str) -> bool:
        """Whether earlier work for `key` (given up on) still runs."""
        with self._guard:
            worker = self._workers.get(key)
            return worker is not None and worker.is_alive()

    def run(self, key: str, fn: Callable[[], T]) -> T:
        """`fn()`'s result, or its exception; GaveUp when it stalls or runs too long."""
        work = interrupts.Work()
        outcome: list = []

        def target() -> None:
            try:
                with interrupts.cancellable(work):
                    outcome.append((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                outcome.append((False, exc))

        worker = threading.Thread(target=target, name=f"rewind-checkpoint {key}", daemon=True)
        with self._guard:
            self._workers[key] = worker
        worker.start()
        try:
            self._wait(worker, work)
        except BaseException:
            work.cancel()  # Ctrl-C in the agent, or given up: the next poll stops it
            raise
        ok, value = outcome[0]
        if ok:
            return value
        raise value

    def _wait(self, worker: threading.Thread, work: interrupts.Work) -> None:
        started = moved = time.monotonic()
        seen = work.ticks
        while True:
            worker.join(POLL_SECONDS)
            if not worker.is_alive():
                return
            now = time.monotonic()
            if work.ticks != seen:
                seen, moved = work.ticks, now
            if now - moved > self.stall:
                raise GaveUp(f"no progress for {now - moved:.0f} s")
            if now - started > self.limit:
                raise GaveUp(f"still running after {now - started:.0f} s")
