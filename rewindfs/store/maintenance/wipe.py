"""`rewind clear`: delete the whole checkpoint base (store, legacy archives, marker)."""

from __future__ import annotations

import shutil

from rewindfs.store.layout import Layout
from rewindfs.store.maintenance.sizes import tree_bytes


def clear_base(layout: Layout) -> int:
    """Delete everything under the base; returns the bytes it held (0 if there was none).

    The base directory itself goes too; the next checkpoint creates it again.
    """
    if not layout.base.exists():
        return 0
    size = tree_bytes(layout.base)
    shutil.rmtree(layout.base)
    return size
