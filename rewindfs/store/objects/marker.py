"""`$base/.last_prune`: when the last automatic sweep ran (Hermes's marker and format).

A missing or corrupt marker (not a number, not finite) counts as never run; a
marker in the future (a clock that jumped back) counts as due.
"""

from __future__ import annotations

import math
import time

from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import write_atomic


def last_run(layout: Layout) -> float | None:
    """Epoch of the last automatic sweep, or None."""
    try:
        value = float(layout.prune_marker.read_text(encoding="utf-8").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if math.isfinite(value) else None


def mark(layout: Layout, when: float | None = None) -> None:
    """Record a sweep at `when` (atomically: a reader never sees a half-written marker)."""
    write_atomic(layout.prune_marker, str(time.time() if when is None else when))


def due(layout: Layout, min_interval_hours: float, now: float | None = None) -> bool:
    last = last_run(layout)
    now = time.time() if now is None else now
    return last is None or not 0 <= now - last < min_interval_hours * 3600
