"""`rewind clear`: delete the whole checkpoint base (store, legacy archives, marker).

Coordinated with writers, as an explicit gc is (see writers): rewindfs writers
in flight finish first and new ones wait, and so does current Hermes (its store
lock), so no checkpoint is half written into a store being deleted; a writer that
waited starts a new store afterwards.
"""

from __future__ import annotations

import shutil

from rewindfs.errors import Busy
from rewindfs.store.maintenance.sizes import tree_bytes
from rewindfs.store.objects import writers
from rewindfs.store.objects.layout import Layout

HERMES_WAIT = 10.0  # seconds; a Hermes checkpoint takes about one


def clear_base(layout: Layout) -> int:
    """Delete everything under the base; returns the bytes it held (0 if there was none).

    The base directory itself goes too; the next checkpoint creates it again.
    Busy when checkpoints keep being written (rewindfs's or Hermes's).
    """
    if not layout.base.exists():
        return 0
    with writers.hermes_excluded(layout, HERMES_WAIT) as hermes_idle:
        if not hermes_idle and writers.hermes_lock_path(layout).exists():
            raise Busy("Hermes is writing a checkpoint; try again in a moment")
        with writers.excluded(layout):
            size = tree_bytes(layout.base)
            shutil.rmtree(layout.base)
    return size
