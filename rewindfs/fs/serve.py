"""Running the mount in this process until it is unmounted or signalled.

pyfuse3 installs no signal handlers: SIGINT, SIGTERM and SIGHUP end the main
loop here, and the `finally` unmounts, so a stopped mount never leaves a dead
mountpoint (ENOTCONN) behind.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pyfuse3
import trio

from rewindfs.fs.model import Model
from rewindfs.fs.operations import RewindOperations

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MAX_WORKERS = 64  # concurrent requests in flight (pyfuse3 tasks)


def mount_options(allow_other: bool) -> set[str]:
    options = {"ro", "fsname=rewindfs", "subtype=rewindfs", "default_permissions"}
    if allow_other:
        options.add("allow_other")
    return options


def serve(model: Model, mountpoint: Path, *, allow_other: bool = False,
          on_ready: Callable[[], None] | None = None,
          operations: RewindOperations | None = None) -> None:
    """Mount `model` at `mountpoint` and serve it; returns once unmounted.

    Serves from `/`: the process then keeps no directory busy, and fusermount3 does
    not take `fsname` for a path relative to where it was started. `operations`
    replaces the adapter (scripts/bench_mount_requests counts its requests).
    """
    os.chdir("/")
    pyfuse3.init(operations or RewindOperations(model), str(mountpoint),
                 mount_options(allow_other))
    try:
        trio.run(_run, on_ready)
    finally:
        pyfuse3.close(unmount=True)
        model.close()


async def _run(on_ready: Callable[[], None] | None) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_stop_on_signal)
        if on_ready is not None:
            on_ready()
        await pyfuse3.main(max_tasks=MAX_WORKERS)
        # Unmounted from outside (fusermount3 -u): stop watching for signals too.
        nursery.cancel_scope.cancel()


async def _stop_on_signal() -> None:
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            log.info("signal %s: unmounting", signal.Signals(signum).name)
            pyfuse3.terminate()
            return
