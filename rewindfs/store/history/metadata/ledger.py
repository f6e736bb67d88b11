"""The agent-write ledger: what content the agent left in each file it wrote.

A harness calls `record(...)` after each of its write tools; a safe restore then
reverts only files whose content is still what the agent wrote, keeping edits a
person made since. One JSON line per write in `store/ledger/<h16>.jsonl`, appended
under an flock; paths are stored surrogate-escaped so any file name round-trips.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from rewindfs.store.history.files.trees import file_oid
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock, write_atomic

MAX_LINES = 20_000  # compacted beyond this; only the newest entry per path matters
DELETED = None


def _path(layout: Layout, h16: str) -> Path:
    return layout.store / "ledger" / f"{h16}.jsonl"


def record(layout: Layout, h16: str, workdir: Path, rel: bytes) -> str | None:
    """Record the agent's version of `rel` (None when the agent deleted it). Returns its oid."""
    oid = file_oid(os.fsencode(str(workdir)) + b"/" + rel)
    line = json.dumps({"t": time.time(), "path": os.fsdecode(rel), "oid": oid})
    path = _path(layout, h16)
    with file_lock(layout.lock_file(f"{h16}.ledger")):
        private.append_text(path, line + "\n")
        if path.stat().st_size > MAX_LINES * 120:
            _compact(path)
    return oid


def writes_since(layout: Layout, h16: str, since: float) -> dict[bytes, str | None]:
    """Newest recorded oid per path among writes at or after `since` (epoch seconds)."""
    out: dict[bytes, str | None] = {}
    try:
        # A line a killed writer cut short (or any non-UTF-8 byte) is skipped below.
        lines = _path(layout, h16).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            item = json.loads(line)
            if float(item["t"]) >= since:
                out[os.fsencode(item["path"])] = item["oid"]
        except (ValueError, KeyError, TypeError):
            continue  # a torn line from a crash: ignore it
    return out


def exists(layout: Layout, h16: str) -> bool:
    return _path(layout, h16).exists()


def _compact(path: Path) -> None:
    newest: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            newest[json.loads(line)["path"]] = line
        except (ValueError, KeyError, TypeError):
            continue
    write_atomic(path, "".join(v + "\n" for v in newest.values()))
