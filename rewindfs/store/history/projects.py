"""The projects registry: `store/projects/<h16>.json`, one record per working directory.

Hermes reads and rewrites these records keeping keys it does not know, so
rewindfs adds its own. The identity of the workdir's parent directory (device
and inode, recorded while the workdir is there) is what orphan pruning takes as
evidence that a workdir was deleted rather than merely unmounted: current
Hermes records it as `workdir_parent_dev`/`workdir_parent_ino`, older rewindfs
as `parent_dev`/`parent_ino`; both pairs are read and both are written, so each
tool can use the other's evidence. `deleted_at` (rewindfs) is when maintenance
first saw the workdir deleted: the start of its quarantine (see
store.maintenance.quarantine); a checkpoint clears it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewindfs.store.objects import notices, private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import write_atomic

# (device key, inode key) of the parent directory's identity: Hermes's spelling first.
IDENTITY_KEYS = (("workdir_parent_dev", "workdir_parent_ino"), ("parent_dev", "parent_ino"))
DELETED_AT = "deleted_at"


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

    def parent_identities(self) -> set[tuple[int, int]]:
        """(dev, ino) of the workdir's parent as recorded by either tool (empty: none)."""
        found = set()
        for dev_key, ino_key in IDENTITY_KEYS:
            dev, ino = self.extra.get(dev_key), self.extra.get(ino_key)
            if _integer(dev) and _integer(ino):
                found.add((dev, ino))
        return found

    @property
    def deleted_at(self) -> float | None:
        """When maintenance first saw the workdir deleted; None when it has not (or since
        then a checkpoint, by either tool, touched the project)."""
        value = self.extra.get(DELETED_AT)
        if not _integer(value) and not isinstance(value, float):
            return None
        return float(value) if value >= self.last_touch else None


def read_record(layout: Layout, h16: str) -> ProjectRecord | None:
    """The record, or None when it is missing or unreadable."""
    return _read(layout.project_record(h16), h16)


def _read(path: str | os.PathLike[str], h16: str) -> ProjectRecord | None:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8-sig"))
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


# last_touch is refreshed at most this often (it counts days: retention, stale projects).
TOUCH_SECONDS = 3600.0


def touch(layout: Layout, h16: str, workdir: Path) -> None:
    """Create or refresh the record: last_touch now, created_at kept, parent identity updated.

    The workdir is there (a checkpoint was just taken), so its parent's identity
    is recorded afresh and any quarantine ends.
    """
    now = time.time()
    old = read_record(layout, h16)
    data: dict[str, Any] = dict(old.extra) if old else {}
    data.pop(DELETED_AT, None)
    data.update(
        workdir=str(workdir),
        created_at=old.created_at if old and old.created_at else now,
        last_touch=now,
    )
    data.update(parent_identity_keys(workdir))
    if old is not None and old.last_touch is not None and \
            0 <= now - old.last_touch < TOUCH_SECONDS and \
            {**record_data(old), "last_touch": now} == data:
        return  # nothing but a recent last_touch would change: spare the write (two fsyncs)
    write_record(layout, h16, data)


def write_record(layout: Layout, h16: str, data: dict[str, Any]) -> None:
    """Replace the record with `data` (atomically)."""
    path = layout.project_record(h16)
    private.ensure_dir(path.parent)
    write_atomic(path, json.dumps(data))


def record_data(record: ProjectRecord) -> dict[str, Any]:
    """The record as stored: the known fields and every other key, untouched."""
    return {**record.extra, "workdir": str(record.workdir), "created_at": record.created_at,
            "last_touch": record.last_touch}


def parent_identity_keys(workdir: Path) -> dict[str, int]:
    """Both spellings of the parent's identity, or {} when it cannot be had.

    A filesystem without stable identities (st_dev or st_ino 0) gives none, as
    Hermes does: no evidence is better than false evidence.
    """
    try:
        st = os.stat(workdir.parent)
    except OSError:
        return {}
    if not st.st_dev or not st.st_ino:
        return {}
    return {"parent_dev": st.st_dev, "parent_ino": st.st_ino,
            "workdir_parent_dev": st.st_dev, "workdir_parent_ino": st.st_ino}


def list_records(layout: Layout) -> list[ProjectRecord]:
    """Every readable record, by hash (one directory listing; no path objects per record:
    status reads a thousand of these)."""
    folder = os.fspath(layout.store / "projects")
    try:
        names = sorted(n[:-5] for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []
    out = []
    for h16 in names:
        record = _read(f"{folder}/{h16}.json", h16)
        if record is None:  # there but unreadable: its project is not listed, so say it
            notices.notice(f"project record {layout.project_record(h16)} is unreadable: "
                           "its project is left out; run `rewind check`")
            continue
        out.append(record)
    return out


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
