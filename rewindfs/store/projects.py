"""The projects registry: `store/projects/<h16>.json`, one record per working directory.

Hermes reads and rewrites these records keeping keys it does not know, so
rewindfs adds its own (`parent_dev`, `parent_ino`: the identity of the workdir's
parent directory, which orphan pruning uses as evidence that a workdir was
deleted rather than merely unmounted).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewindfs.store.layout import Layout
from rewindfs.store.locks import write_atomic


@dataclass
class ProjectRecord:
    h16: str
    workdir: Path
    created_at: float = 0.0
    last_touch: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.workdir.name or str(self.workdir)


def read_record(layout: Layout, h16: str) -> ProjectRecord | None:
    """The record, or None when it is missing or unreadable."""
    try:
        data = json.loads(layout.project_record(h16).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("workdir"), str):
        return None
    known = {"workdir", "created_at", "last_touch"}
    return ProjectRecord(
        h16=h16,
        workdir=Path(data["workdir"]),
        created_at=_number(data.get("created_at")),
        last_touch=_number(data.get("last_touch")),
        extra={k: v for k, v in data.items() if k not in known},
    )


def touch(layout: Layout, h16: str, workdir: Path) -> None:
    """Create or refresh the record: last_touch now, created_at kept, parent identity updated."""
    now = time.time()
    old = read_record(layout, h16)
    data: dict[str, Any] = dict(old.extra) if old else {}
    data.update(
        workdir=str(workdir),
        created_at=old.created_at if old and old.created_at else now,
        last_touch=now,
    )
    try:
        st = os.stat(workdir.parent)
        data.update(parent_dev=st.st_dev, parent_ino=st.st_ino)
    except OSError:
        pass
    path = layout.project_record(h16)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data))


def list_records(layout: Layout) -> list[ProjectRecord]:
    folder = layout.store / "projects"
    try:
        names = sorted(p.stem for p in folder.glob("*.json"))
    except OSError:
        return []
    return [r for r in (read_record(layout, h) for h in names) if r is not None]


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
