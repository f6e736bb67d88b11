"""`rewind status`: what the checkpoint base holds, per project and in total.

Hermes's `store_status` keys are kept (base, store_size_bytes, legacy_size_bytes,
total_size_bytes, project_count, projects[hash, workdir, exists, created_at,
last_touch, commits], pre_v2_projects[path, workdir, exists], legacy_archives[name,
size_bytes, mtime]) and extended (checkpoints, size_bytes, state, deleted_at,
quarantine_until per project; reclaimable_bytes, last_prune).

Looking is also when a deletion is first seen: status notes it in the project's
record, which starts its quarantine (see quarantine), as a sweep would.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from rewindfs.errors import StoreError
from rewindfs.store.history.projects import ProjectRecord, list_records
from rewindfs.store.history.verdict import State, judge
from rewindfs.store.maintenance import legacy, quarantine
from rewindfs.store.maintenance.inventory import History, histories
from rewindfs.store.maintenance.ownership import exclusive_bytes
from rewindfs.store.maintenance.sizes import Reclaimable, tree_bytes
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
                 now: float | None = None) -> StoreStatus:
    """The base's sizes, its projects (newest touch first), pre-v2 repositories and
    legacy archives. Without `sizes`, per-project and reclaimable sizes (which need
    git) are left out."""
    now = time.time() if now is None else now
    out = StoreStatus(str(layout.base), last_prune=marker.last_run(layout), reclaimable_bytes=0)
    if not layout.base.exists():
        return out
    out.store_size_bytes = tree_bytes(layout.store)
    out.legacy_archives = [ArchiveStatus(a.name, a.size(), a.created, _mtime(a.path))
                           for a in legacy.archives(layout)]
    out.legacy_size_bytes = sum(a.size_bytes for a in out.legacy_archives)
    out.pre_v2_projects = [ShadowStatus(str(r.path), r.workdir, r.exists)
                           for r in shadowrepos.shadow_repos(layout)]
    out.total_size_bytes = out.store_size_bytes + out.legacy_size_bytes + _others(layout)
    store = Store(layout)
    if store.exists():
        reclaimable = _start_reclaimable(layout) if sizes else None  # git walks meanwhile
        try:
            out.projects = _projects(layout, store, retention_days, sizes, now)
        except BaseException:
            if reclaimable is not None:
                reclaimable.cancel()
            raise
        out.reclaimable_bytes = _reclaimable(layout, reclaimable)
    return out


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
              now: float) -> list[ProjectStatus]:
    repo = store.repo
    quarantine.observe(layout, list_records(layout), retention_days, now)
    records = {r.h16: r for r in list_records(layout)}
    hists = histories(repo)
    for h16 in records.keys() - hists.keys():
        hists.update(histories(repo, [h16]))  # a record whose ref is gone: 0 checkpoints
    owned = _sizes(layout, repo, hists) if sizes else {}
    rows = [_row(h16, records.get(h16), hist.count, owned.get(h16), retention_days, now)
            for h16, hist in hists.items()]
    return sorted(rows, key=lambda p: (-(p.last_touch or 0), p.hash))


def _sizes(layout: Layout, repo, hists: dict[str, History]) -> dict[str, int]:
    """Per-project sizes; none when git cannot be run (status still shows the rest)."""
    try:
        return exclusive_bytes(layout, repo, hists)
    except StoreError as exc:
        _unavailable(layout, "project sizes", exc)
        return {}


def _start_reclaimable(layout: Layout) -> Reclaimable | None:
    try:
        return Reclaimable(layout)
    except StoreError as exc:
        _unavailable(layout, "reclaimable size", exc)
        return None


def _reclaimable(layout: Layout, running: Reclaimable | None) -> int | None:
    if running is None:
        return None
    try:
        return running.bytes()
    except StoreError as exc:
        _unavailable(layout, "reclaimable size", exc)
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
