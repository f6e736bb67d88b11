"""When `rewind check` last ran and what it found, kept for `rewind doctor`."""

from __future__ import annotations

import json
import time

from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.verify.problems import Report


def record(layout: Layout, report: Report) -> None:
    """Keep when this check ran and what it found (a store that does not exist yet gets
    nothing)."""
    if not (layout.store / "HEAD").exists():
        return
    private.write_atomic(layout.last_check, json.dumps({
        "time": int(time.time()), "damaged": len(report.damaged),
        "problems": len(report.problems)}))


def last_check(layout: Layout) -> dict | None:
    """What `record` kept: {"time", "damaged", "problems"}, or None (never checked)."""
    try:
        data = json.loads(layout.last_check.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), int)
                                              for k in ("time", "damaged", "problems")):
        return None
    return data
