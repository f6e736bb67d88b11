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
from rewindfs.fs.trim import Trimmer
from rewindfs.fs.watch import Watcher

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MAX_WORKERS = 64  # concurrent requests in flight (pyfuse3 tasks)


def mount_options(allow_other: bool) -> set[str]:
    # default_permissions: the kernel checks the modes and owner shown (Context), so with
    # allow_other a checkpoint is no more readable than its modes say.
    options = {"ro", "fsname=rewindfs", "subtype=rewindfs", "default_permissions"}
    if allow_other:
        options.add("allow_other")
    return options


def serve(model: Model, mountpoint: Path, *, allow_other: bool = False,
          on_ready: Callable[[], None] | None = None,
          operations: RewindOperations | None = None, kernel_cache: bool = True) -> None:
    """Mount `model` at `mountpoint` and serve it; returns once unmounted.

    Serves from `/`: the process then keeps no directory busy, and fusermount3 does
    not take `fsname` for a path relative to where it was started. `operations`
    replaces the adapter (scripts/bench_mount_requests counts its requests);
    `kernel_cache` False serves as with stock pyfuse3.
    """
    os.chdir("/")
    ops = operations or RewindOperations(model, kernel_cache=kernel_cache)
    watcher = Watcher(model.root, _invalidate_entry, _invalidate_inode,
                      model.context.refresh_interval)
    trimmer = Trimmer(ops.table, _invalidate_entry)
    model.context.watched = True
    pyfuse3.init(ops, str(mountpoint), mount_options(allow_other))
    try:
        watcher.start()
        trimmer.start()
        trio.run(_run, on_ready)
    finally:
        trimmer.stop()
        watcher.stop()  # before close: no invalidation may reach a closed session
        pyfuse3.close(unmount=True)
        model.close()


def _invalidate_entry(directory: int, name: bytes) -> None:
    pyfuse3.invalidate_entry(directory, name)


def _invalidate_inode(inode: int) -> None:
    pyfuse3.invalidate_inode(inode, attr_only=False)


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
