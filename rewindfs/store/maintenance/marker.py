"""`$base/.last_prune`: when the last automatic sweep ran (Hermes's marker and format).

A missing or corrupt marker (not a number, not finite) counts as never run; a
marker in the future (a clock that jumped back) counts as due.
"""

from __future__ import annotations

import math
import os
import time

from rewindfs.store.layout import Layout


def last_run(layout: Layout) -> float | None:
    """Epoch of the last automatic sweep, or None."""
    try:
        value = float(layout.prune_marker.read_text(encoding="utf-8").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if math.isfinite(value) else None


def mark(layout: Layout, when: float | None = None) -> None:
    """Record a sweep at `when` (atomically: a reader never sees a half-written marker)."""
    marker = layout.prune_marker
    tmp = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
    tmp.write_text(str(time.time() if when is None else when), encoding="utf-8")
    tmp.replace(marker)


def due(layout: Layout, min_interval_hours: float, now: float | None = None) -> bool:
    last = last_run(layout)
    now = time.time() if now is None else now
    return last is None or not 0 <= now - last < min_interval_hours * 3600
