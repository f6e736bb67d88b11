"""A maintenance sweep (`rewind prune`, and the automatic one): plan, then apply.

Planning only reads: which projects are orphans or stale, which legacy archives
have expired. Applying deletes exactly the planned projects, each judged again
under its lock (so a project touched since the plan was shown is kept), then
enforces the size cap and runs gc. Counts use Hermes's names (scanned,
deleted_orphan, deleted_stale, errors, bytes_freed) plus rewindfs's own.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from rewindfs.errors import Busy, RewindError
from rewindfs.store.layout import Layout
from rewindfs.store.maintenance import legacy, sizecap
from rewindfs.store.maintenance.gc import GRACE_MINUTES, GcResult, gc
from rewindfs.store.maintenance.progress import Progress, quiet
from rewindfs.store.maintenance.removal import remove_project
from rewindfs.store.maintenance.sizes import tree_bytes
from rewindfs.store.maintenance.verdict import State, is_stale, workdir_deleted
from rewindfs.store.projects import ProjectRecord, list_records
from rewindfs.store.store import Store

log = logging.getLogger(__name__)
MiB = 1024 * 1024
LOOSE_OBJECTS_FOR_GC = 6700  # git's gc.auto default


@dataclass(frozen=True)
class Policy:
    retention_days: float = 7
    delete_orphans: bool = True
    max_total_size_mb: int = 500
    grace_minutes: float = GRACE_MINUTES
    # Orphans that may go, e.g. those a confirmation prompt showed (Hermes's
    # orphan_allowlist: project hashes, and pre-v2 shadow repositories by path as str);
    # an orphan not in it is kept (it may still go as stale). None: every orphan may go.
    orphan_allowlist: frozenset[str] | None = None


@dataclass(frozen=True)
class Doomed:
    """A project the sweep will remove, and why."""

    h16: str
    workdir: str
    reason: State  # ORPHAN or STALE
    last_touch: float


@dataclass
class Plan:
    scanned: int = 0
    projects: list[Doomed] = field(default_factory=list)
    archives: list[legacy.Archive] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.projects and not self.archives


@dataclass
class Report:
    scanned: int = 0
    deleted_orphan: int = 0
    deleted_stale: int = 0
    deleted_legacy: int = 0
    dropped_checkpoints: int = 0
    kept_busy: int = 0  # planned, but in use or touched since: kept
    errors: int = 0
    bytes_freed: int = 0
    gc_ran: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan(layout: Layout, policy: Policy, now: float | None = None) -> Plan:
    """What a sweep with `policy` would remove (reads only)."""
    now = time.time() if now is None else now
    result = Plan(archives=legacy.expired(layout, policy.retention_days, now))
    if not Store(layout).exists():
        return result
    for record in list_records(layout):
        result.scanned += 1
        reason = _verdict(record, policy, now)
        if reason is not None:
            result.projects.append(Doomed(record.h16, str(record.workdir), reason,
                                          record.last_touch))
    return result


def _verdict(record: ProjectRecord, policy: Policy, now: float) -> State | None:
    allowed = policy.orphan_allowlist is None or record.h16 in policy.orphan_allowlist
    if policy.delete_orphans and allowed and workdir_deleted(record):
        return State.ORPHAN
    if is_stale(record, policy.retention_days, now):
        return State.STALE
    return None


def run(layout: Layout, policy: Policy, todo: Plan | None = None, *, always_gc: bool = True,
        last_sweep: float | None = None, progress: Progress = quiet,
        show_git_progress: bool = False) -> Report:
    """Apply `todo` (planned now when None), then the size cap, then gc.

    Without `always_gc`, gc runs only when this sweep removed something or there is
    likely garbage: boundaries moved since `last_sweep`, or many loose objects.
    """
    start = time.monotonic()
    todo = plan(layout, policy) if todo is None else todo
    report = Report(scanned=todo.scanned)
    before = tree_bytes(layout.base)
    store = Store(layout)
    if store.exists():
        _remove_projects(layout, store, policy, todo, report, progress)
    _remove_archives(layout, policy, todo, report)
    if store.exists():
        _enforce_cap(layout, store, policy, report, progress)
        if always_gc or report.deleted_orphan or report.deleted_stale or \
                report.dropped_checkpoints or _garbage_likely(layout, last_sweep):
            report.gc_ran = _gc(layout, policy, report, show_git_progress).ran
    report.bytes_freed = max(0, before - tree_bytes(layout.base))
    report.seconds = time.monotonic() - start
    return report


def _remove_projects(layout: Layout, store: Store, policy: Policy, todo: Plan, report: Report,
                     progress: Progress) -> None:
    for doomed in progress(todo.projects, "removing projects"):
        def still(record: ProjectRecord, doomed: Doomed = doomed) -> bool:
            return _verdict(record, policy, time.time()) is doomed.reason
        try:
            removed = remove_project(layout, store.repo, doomed.h16, still)
        except (RewindError, OSError) as exc:
            log.warning("could not remove project %s (%s): %s", doomed.h16, doomed.workdir, exc)
            report.errors += 1
            continue
        if not removed:
            report.kept_busy += 1
        elif doomed.reason is State.ORPHAN:
            report.deleted_orphan += 1
        else:
            report.deleted_stale += 1


def _remove_archives(layout: Layout, policy: Policy, todo: Plan, report: Report) -> None:
    still_expired = {a.path for a in legacy.expired(layout, policy.retention_days)}
    for archive in todo.archives:
        if archive.path not in still_expired:
            continue
        try:
            legacy.delete(archive)
            report.deleted_legacy += 1
        except OSError as exc:
            log.warning("could not delete legacy archive %s: %s", archive.path, exc)
            report.errors += 1


def _enforce_cap(layout: Layout, store: Store, policy: Policy, report: Report,
                 progress: Progress) -> None:
    if policy.max_total_size_mb <= 0:
        return
    try:
        cap_plan = sizecap.plan(layout, store.repo, policy.max_total_size_mb * MiB,
                                progress=progress)
        report.dropped_checkpoints = sizecap.apply(layout, store.repo, cap_plan)
    except RewindError as exc:
        log.warning("size cap not enforced: %s", exc)
        report.errors += 1


def _gc(layout: Layout, policy: Policy, report: Report, show_progress: bool) -> GcResult:
    try:
        return gc(layout, policy.grace_minutes, show_progress=show_progress)
    except Busy:
        return GcResult(ran=False)  # another gc is doing the job right now
    except RewindError as exc:
        log.warning("gc failed: %s", exc)
        report.errors += 1
        return GcResult(ran=False)


def _garbage_likely(layout: Layout, last_sweep: float | None) -> bool:
    """Worth a gc: boundaries moved since the last sweep, or many loose objects (git's sample)."""
    objects = layout.store / "objects"
    try:
        if last_sweep is None or (layout.store / "shallow").stat().st_mtime > last_sweep:
            return True
    except OSError:
        pass
    try:
        sample = sum(1 for _ in (objects / "17").iterdir())
    except OSError:
        sample = 0
    return sample * 256 > LOOSE_OBJECTS_FOR_GC
