"""A maintenance sweep (`rewind prune`, and the automatic one): plan, then apply.

Planning only reads: which projects are stale or orphans (quarantine over),
which are deleted and still in quarantine, which of Hermes's pre-v2 shadow
repositories directly under the base are orphans or stale, which legacy
archives have expired. Applying first notes deletions seen for the first time
(the quarantine starts then, see quarantine), then deletes exactly the planned
projects, each judged again under its lock (so a project touched since the plan
was shown is kept), then the planned repositories and archives, then enforces
the size cap and runs gc.

An automatic sweep keeps deleted projects until their quarantine is over and
lets gc keep young unreachable objects (the grace period). An explicit one
(`purge_deleted`, `reclaim_now`: a person asked, after confirmation) may remove
quarantined projects now and frees unreachable objects now (gc's immediate mode).

Counts use Hermes's names and meanings (scanned, deleted_orphan, deleted_stale,
errors, bytes_freed: pre-v2 repositories and legacy archives included, as
Hermes counts them), plus rewindfs's own breakdown.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from rewindfs.errors import Busy, RewindError
from rewindfs.store.history.projects import ProjectRecord, list_records
from rewindfs.store.history.verdict import State, judge
from rewindfs.store.maintenance import caprecord, legacy, quarantine, sizecap
from rewindfs.store.maintenance import gc as gc_mod
from rewindfs.store.maintenance.gc import GRACE_MINUTES
from rewindfs.store.maintenance.objsizes import object_bytes
from rewindfs.store.maintenance.progress import Progress, quiet
from rewindfs.store.maintenance.removal import remove_project
from rewindfs.store.maintenance.sizes import tree_bytes
from rewindfs.store.objects import shadowrepos
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.repo import Store

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
    # A person asked (and confirmed): deleted projects in quarantine may go now ...
    purge_deleted: bool = False
    # ... and unreachable objects are freed now, coordinated with writers (gc, immediate).
    reclaim_now: bool = False

    def orphan_allowed(self, key: str) -> bool:
        return self.delete_orphans and (self.orphan_allowlist is None
                                        or key in self.orphan_allowlist)


@dataclass(frozen=True)
class Doomed:
    """A project the sweep will remove, and why."""

    h16: str
    workdir: str
    reason: State  # ORPHAN or STALE; DELETED: still in quarantine, removed on request
    last_touch: float
    deleted_at: float | None = None


@dataclass(frozen=True)
class Quarantined:
    """A deleted project the sweep keeps: its quarantine is not over."""

    h16: str
    workdir: str
    deleted_at: float  # when first seen deleted (now, if this plan is the first to see it)
    until: float | None  # when an automatic sweep may remove it (None: never by itself)


@dataclass(frozen=True)
class DoomedRepo:
    """A pre-v2 shadow repository the sweep will delete, and why."""

    repo: shadowrepos.ShadowRepo
    reason: State  # ORPHAN or STALE


@dataclass
class Plan:
    scanned: int = 0
    projects: list[Doomed] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    repos: list[DoomedRepo] = field(default_factory=list)
    archives: list[legacy.Archive] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.projects and not self.repos and not self.archives


@dataclass
class Report:
    # Hermes's keys and meanings
    scanned: int = 0
    deleted_orphan: int = 0
    deleted_stale: int = 0
    errors: int = 0
    bytes_freed: int = 0
    # rewindfs's breakdown
    deleted_projects: int = 0  # of the deleted_* counts: projects of the store
    deleted_pre_v2: int = 0  # ... Hermes's pre-v2 shadow repositories
    deleted_legacy: int = 0  # ... legacy archives (counted as stale, as Hermes does)
    quarantined: int = 0  # deleted projects kept (quarantine not over)
    newly_quarantined: int = 0  # ... of which seen deleted for the first time now
    dropped_checkpoints: int = 0
    kept_busy: int = 0  # planned, but in use or touched since: kept
    placeholders_removed: int = 0  # left by a killed gc
    gc_ran: bool = False
    kept_younger_than_minutes: float = 0.0  # unreachable objects this young were kept
    hermes_active: bool = False  # why they were, for an explicit sweep
    writers_held_seconds: float = 0.0  # how long new checkpoints waited for the prune step
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan(layout: Layout, policy: Policy, now: float | None = None) -> Plan:
    """What a sweep with `policy` would remove, and which deleted projects it keeps (reads only)."""
    now = time.time() if now is None else now
    result = Plan(archives=legacy.expired(layout, policy.retention_days, now))
    for repo in shadowrepos.shadow_repos(layout):
        result.scanned += 1
        reason = legacy.judge_shadow(repo, policy.retention_days, policy.delete_orphans,
                                     policy.orphan_allowlist, now)
        if reason is not None:
            result.repos.append(DoomedRepo(repo, reason))
    if not Store(layout).exists():
        return result
    for record in list_records(layout):
        result.scanned += 1
        verdict = judge(record, policy.retention_days, now)
        reason = _reason(record, policy, now)
        if reason is not None:
            result.projects.append(Doomed(record.h16, str(record.workdir), reason,
                                          record.last_touch, verdict.deleted_at))
        elif verdict.state is State.DELETED and verdict.deleted_at is not None:
            result.quarantined.append(Quarantined(record.h16, str(record.workdir),
                                                  verdict.deleted_at, verdict.quarantine_until))
    return result


def _reason(record: ProjectRecord, policy: Policy, now: float) -> State | None:
    """Why the project goes under `policy`, or None when it stays."""
    state = judge(record, policy.retention_days, now).state
    if state is State.ORPHAN:
        # Quarantine over: it also went untouched for retention_days, so it is stale anyway.
        return State.ORPHAN if policy.orphan_allowed(record.h16) else State.STALE
    if state is State.DELETED:
        return State.DELETED if policy.purge_deleted and policy.orphan_allowed(record.h16) \
            else None
    return State.STALE if state is State.STALE else None


def run(layout: Layout, policy: Policy, todo: Plan | None = None, *, always_gc: bool = True,
        last_sweep: float | None = None, progress: Progress = quiet,
        show_git_progress: bool = False) -> Report:
    """Apply `todo` (planned now when None), then the size cap, then gc.

    Without `always_gc`, gc runs only when this sweep removed something or there is
    likely garbage: boundaries moved since `last_sweep`, or many loose objects.
    """
    start = time.monotonic()
    todo = plan(layout, policy) if todo is None else todo
    report = Report(scanned=todo.scanned, quarantined=len(todo.quarantined))
    before = tree_bytes(layout.base)
    store = Store(layout)
    if store.exists():
        report.placeholders_removed = gc_mod.clear_placeholders(layout)
        records = list_records(layout)
        report.newly_quarantined = quarantine.observe(layout, records, policy.retention_days)
        _remove_projects(layout, store, policy, todo, report, progress)
    _remove_repos(layout, policy, todo, report)
    _remove_archives(layout, policy, todo, report)
    if store.exists():
        capped = _enforce_cap(layout, store, policy, report, progress)
        if always_gc or report.deleted_projects or report.dropped_checkpoints \
                or _garbage_likely(layout, last_sweep):
            _gc(layout, policy, report, show_git_progress)
        if capped is not None:
            _record_cap(layout, policy, report, capped)
    report.bytes_freed = max(0, before - tree_bytes(layout.base))
    report.seconds = time.monotonic() - start
    return report


def _remove_projects(layout: Layout, store: Store, policy: Policy, todo: Plan, report: Report,
                     progress: Progress) -> None:
    for doomed in progress(todo.projects, "removing projects"):
        def still(record: ProjectRecord, doomed: Doomed = doomed) -> bool:
            return _reason(record, policy, time.time()) is doomed.reason
        try:
            removed = remove_project(layout, store.repo, doomed.h16, still)
        except (RewindError, OSError) as exc:
            log.warning("could not remove project %s (%s): %s", doomed.h16, doomed.workdir, exc)
            report.errors += 1
            continue
        if not removed:
            report.kept_busy += 1
            continue
        report.deleted_projects += 1
        if doomed.reason is State.STALE:
            report.deleted_stale += 1
        else:
            report.deleted_orphan += 1


def _remove_repos(layout: Layout, policy: Policy, todo: Plan, report: Report) -> None:
    """Delete the planned pre-v2 repositories that still qualify, for the same reason."""
    now = {r.path: r for r in shadowrepos.shadow_repos(layout)}
    for doomed in todo.repos:
        repo = now.get(doomed.repo.path)
        if repo is None or legacy.judge_shadow(repo, policy.retention_days, policy.delete_orphans,
                                               policy.orphan_allowlist) is not doomed.reason:
            continue
        try:
            legacy.delete_repo(repo)
        except OSError as exc:
            log.warning("could not delete pre-v2 checkpoint repository %s: %s", repo.path, exc)
            report.errors += 1
            continue
        report.deleted_pre_v2 += 1
        if doomed.reason is State.STALE:
            report.deleted_stale += 1
        else:
            report.deleted_orphan += 1


def _remove_archives(layout: Layout, policy: Policy, todo: Plan, report: Report) -> None:
    still_expired = {a.path for a in legacy.expired(layout, policy.retention_days)}
    for archive in todo.archives:
        if archive.path not in still_expired:
            continue
        try:
            legacy.delete(archive)
        except OSError as exc:
            log.warning("could not delete legacy archive %s: %s", archive.path, exc)
            report.errors += 1
            continue
        report.deleted_legacy += 1
        report.deleted_stale += 1


def _enforce_cap(layout: Layout, store: Store, policy: Policy, report: Report,
                 progress: Progress) -> caprecord.CapPrune | None:
    """Drop what the size cap asks; the record of it (finished by `_record_cap` after gc),
    None when nothing was dropped."""
    if policy.max_total_size_mb <= 0:
        return None
    cap = policy.max_total_size_mb * MiB
    started, before = time.time(), object_bytes(layout)[0]
    try:
        cap_plan = sizecap.plan(layout, store.repo, cap, progress=progress)
        report.dropped_checkpoints = sizecap.apply(layout, store.repo, cap_plan)
    except RewindError as exc:
        log.warning("size cap not enforced: %s", exc)
        report.errors += 1
        return None
    if not cap_plan.drops:
        return None
    by = caprecord.EXPLICIT_PRUNE if policy.reclaim_now else caprecord.AUTOMATIC_SWEEP
    record = caprecord.CapPrune(by, cap, started, before, why=caprecord.over_why(before, cap),
                                dropped=caprecord.dropped(layout, cap_plan.drops, cap))
    if cap_plan.exhausted and (cap_plan.expected_live or 0) > cap:
        record.left_over = caprecord.pinned_why(cap_plan.expected_live or 0)
    return record


def _record_cap(layout: Layout, policy: Policy, report: Report,
                record: caprecord.CapPrune) -> None:
    record.after_bytes, record.ended = object_bytes(layout)[0], time.time()
    record.kept_younger_than_minutes = report.kept_younger_than_minutes
    record.hermes_active = report.hermes_active
    if record.after_bytes <= record.cap_bytes:
        record.left_over = None
    elif record.left_over is None:
        record.left_over = ("gc did not run (another was running)" if not report.gc_ran else
                            f"unreachable objects younger than "
                            f"{report.kept_younger_than_minutes:g} minutes are kept")
    caprecord.write(layout, record)


def _gc(layout: Layout, policy: Policy, report: Report, show_progress: bool) -> None:
    try:
        # An explicit sweep waits for a running gc (the person asked for the space);
        # the automatic one leaves the job to it.
        result = gc_mod.gc(layout, policy.grace_minutes, immediate=policy.reclaim_now,
                           show_progress=show_progress, wait=policy.reclaim_now)
    except Busy:
        return
    except RewindError as exc:
        log.warning("gc failed: %s", exc)
        report.errors += 1
        return
    report.gc_ran = result.ran
    report.kept_younger_than_minutes = result.kept_younger_than
    report.hermes_active = result.hermes_active
    report.writers_held_seconds = result.writers_held


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
