"""`rewind status`: what the checkpoint base holds, per project and in total.

Hermes's `store_status` keys are kept (base, store_size_bytes, legacy_size_bytes,
total_size_bytes, project_count, projects[hash, workdir, exists, created_at,
last_touch, commits], pre_v2_projects[path, workdir, exists], legacy_archives[name,
size_bytes, mtime]) and extended (checkpoints, size_bytes, state, deleted_at,
quarantine_until per project; reclaimable_bytes, last_prune; the size cap: cap_bytes,
cap_size_bytes (what the cap is held against: the bytes of the store's objects) and
last_pruning, the record of what the last pruning to it dropped (caprecord)).

Looking is also when a deletion is first seen: status notes it in the project's
record, which starts its quarantine (see quarantine), as a sweep would.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rewindfs.errors import StoreError
from rewindfs.store.history.projects import ProjectRecord, list_records, read_record
from rewindfs.store.history.verdict import State, judge
from rewindfs.store.maintenance import caprecord, legacy, liveset, quarantine
from rewindfs.store.maintenance.inventory import histories, project_hashes
from rewindfs.store.maintenance.liveset import Live
from rewindfs.store.maintenance.objsizes import object_bytes
from rewindfs.store.maintenance.sizes import tree_bytes
from rewindfs.store.objects import damage, marker, notices, shadowrepos
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.repo import Store


@dataclass
class ProjectStatus:
    hash: str
    workdir: str | None  # None: a ref without a record
    checkpoints: int
    created_at: float | None
    last_touch: float | None
    size_bytes: int | None  # bytes only this project holds (None: could not measure)
    state: str  # verdict.State: live, stale, missing, deleted (in quarantine), orphan
    exists: bool  # the workdir is there now
    deleted_at: float | None = None  # deleted/orphan: when the deletion was first seen
    quarantine_until: float | None = None  # deleted: when a sweep may remove it


@dataclass
class ArchiveStatus:
    name: str
    size_bytes: int
    created: float
    mtime: float  # Hermes's key


@dataclass
class ShadowStatus:
    """A pre-v2 repository still directly under the base (Hermes's pre_v2_projects)."""

    path: str
    workdir: str | None
    exists: bool


@dataclass
class StoreStatus:
    base: str
    store_size_bytes: int = 0
    legacy_size_bytes: int = 0
    total_size_bytes: int = 0
    projects: list[ProjectStatus] = field(default_factory=list)
    pre_v2_projects: list[ShadowStatus] = field(default_factory=list)
    legacy_archives: list[ArchiveStatus] = field(default_factory=list)
    # Bytes of objects nothing reaches: what `rewind prune` frees now (None: not measured).
    reclaimable_bytes: int | None = None
    last_prune: float | None = None
    cap_bytes: int = 0  # max_total_size_mb in bytes (0: no cap)
    cap_size_bytes: int = 0  # what the cap is held against: the store's objects
    last_pruning: dict[str, Any] | None = None  # caprecord.CapPrune, as a dict

    @property
    def project_count(self) -> int:
        return len(self.projects)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["project_count"] = self.project_count
        for entry in data["projects"]:
            entry["commits"] = entry["checkpoints"]  # Hermes's name
        return data


def store_status(layout: Layout, retention_days: float, *, sizes: bool = True,
                 now: float | None = None, cap_bytes: int = 0) -> StoreStatus:
    """The base's sizes, its projects (newest touch first), pre-v2 repositories and
    legacy archives, the size cap `cap_bytes` and the last pruning to it. Without
    `sizes`, per-project and reclaimable sizes (which need git) are left out."""
    now = time.time() if now is None else now
    out = StoreStatus(str(layout.base), last_prune=marker.last_run(layout), reclaimable_bytes=0,
                      cap_bytes=max(0, cap_bytes))
    if not layout.base.exists():
        return out
    out.cap_size_bytes, objects = object_bytes(layout)
    out.store_size_bytes = store_bytes(layout, objects)
    last = caprecord.read(layout)
    out.last_pruning = last.to_dict() if last is not None else None
    out.legacy_archives = [ArchiveStatus(a.name, a.size(), a.created, _mtime(a.path))
                           for a in legacy.archives(layout)]
    out.legacy_size_bytes = sum(a.size_bytes for a in out.legacy_archives)
    out.pre_v2_projects = [ShadowStatus(str(r.path), r.workdir, r.exists)
                           for r in shadowrepos.shadow_repos(layout)]
    out.total_size_bytes = out.store_size_bytes + out.legacy_size_bytes + _others(layout)
    store = Store(layout)
    if store.exists():
        out.projects, out.reclaimable_bytes = _projects(layout, store, retention_days, sizes,
                                                        now)
    return out


def store_bytes(layout: Layout, objects: int | None = None) -> int:
    """Apparent size of every file of the store; the loose objects scanned only in the
    directories written since the last look (objsizes), or `objects` when known."""
    total = object_bytes(layout)[1] if objects is None else objects
    try:
        with os.scandir(layout.store) as entries:
            for entry in entries:
                if entry.name == "objects":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    total += tree_bytes(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total


def _mtime(path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _others(layout: Layout) -> int:
    """Bytes under the base outside the store and the legacy archives (.last_prune, v1 repos)."""
    total = 0
    for child in layout.base.iterdir():
        if child.name == "store" or child.name.startswith(shadowrepos.PREFIX):
            continue
        total += tree_bytes(child) if child.is_dir() and not child.is_symlink() else \
            child.lstat().st_size
    return total


def _projects(layout: Layout, store: Store, retention_days: float, sizes: bool,
              now: float) -> tuple[list[ProjectStatus], int | None]:
    """Each project's row (newest touch first), and the reclaimable bytes (None: unknown)."""
    repo = store.repo
    records = {r.h16: r for r in list_records(layout)}
    for h16 in quarantine.noted(layout, list(records.values()), retention_days, now):
        record = read_record(layout, h16)  # rewritten: its deletion noted, or forgotten
        if record is not None:
            records[h16] = record
    live = _live(layout, repo) if sizes else None
    counts = live.counts if live is not None else {}
    hashes = set(records) | set(project_hashes(repo))
    missing = [h for h in hashes if h not in counts]
    for h16, hist in histories(repo, missing).items():  # the records could not say
        counts[h16] = hist.count
    owned = live.exclusive if live is not None else {}
    rows = [_row(h16, records.get(h16), counts[h16], owned.get(h16), retention_days, now)
            for h16 in hashes]
    rows.sort(key=lambda p: (-(p.last_touch or 0), p.hash))
    return rows, live.reclaimable if live is not None else None


def _live(layout: Layout, repo) -> Live | None:
    """Counts and sizes from liveset; None when git cannot be run (status shows the rest)."""
    try:
        return liveset.measure(layout, repo)
    except StoreError as exc:
        _unavailable(layout, "project sizes and the reclaimable size", exc)
        return None


def _unavailable(layout: Layout, what: str, exc: StoreError) -> None:
    """Said once (store.objects.notices), naming the damaged file when there is one: a
    `?` in status must not pass for a store that is merely busy."""
    found = damage.explain(layout, exc)
    why = f"{found.path} ({found.problem}); run `rewind check`" if found is not None else exc
    notices.notice(f"{what} unavailable: {why}")


def _row(h16: str, record: ProjectRecord | None, count: int, size: int | None,
         retention_days: float, now: float) -> ProjectStatus:
    if record is None:
        return ProjectStatus(h16, None, count, None, None, size, State.MISSING.value, False)
    verdict = judge(record, retention_days, now)
    return ProjectStatus(h16, str(record.workdir), count, record.created_at or None,
                         record.last_touch or None, size, verdict.state.value,
                         record.workdir.exists(), verdict.deleted_at, verdict.quarantine_until)
