"""Hermes's pre-v2 per-directory shadow repositories, and the legacy archives they go into.

Before the shared store, Hermes kept one git directory per working directory
directly under `checkpoints/` (a `HEAD`, and a `HERMES_WORKDIR` file naming the
workdir). As Hermes does, they are moved, untouched, into
`checkpoints/legacy-<YYYYmmdd-HHMMSS>/` when the store is created (`migrate`);
any that appear later (an old Hermes still writing that layout) stay where they
are and prune judges them where they are (`shadow_repos`, `judge_shadow`):

* an orphan when its `HERMES_WORKDIR` names a directory that was provably
  deleted (the structural evidence of verdict.deleted_path: these repositories
  record no parent identity). Hermes also deletes one that has no
  `HERMES_WORKDIR` at all; rewindfs keeps it (no evidence), stale rules aside;
* stale when nothing in it changed for retention_days.

Archives expire retention_days after they were made (the stamp in their name,
else their mtime) and are deleted by prune, or all at once by `rewind
clear-legacy`. Sweeps count both as Hermes does (archives and stale
repositories as deleted_stale). A repository is a directory with a `HEAD` file
and either a `HERMES_WORKDIR` file (Hermes takes it for one even without
`objects/`, and counts it in `scanned`) or an `objects` directory: anything else
under `checkpoints/` is left alone.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from rewindfs.store.layout import Layout
from rewindfs.store.maintenance.sizes import tree_bytes
from rewindfs.store.maintenance.verdict import State, deleted_path

log = logging.getLogger(__name__)

PREFIX = "legacy-"
STAMP = "%Y%m%d-%H%M%S"
RESERVED = {"store", ".last_prune"}


@dataclass
class Archive:
    name: str
    path: Path
    created: float  # epoch: from the name, else the directory's mtime

    def size(self) -> int:
        return tree_bytes(self.path)


def v1_repos(layout: Layout) -> list[Path]:
    """v1 shadow repositories directly under the base (with their HERMES_WORKDIR), by name."""
    return [r.path for r in shadow_repos(layout) if (r.path / "HERMES_WORKDIR").is_file()]


@dataclass
class ShadowRepo:
    """A pre-v2 repository directly under the base."""

    path: Path
    workdir: str | None  # from HERMES_WORKDIR; None: no marker, or unreadable
    marker_unreadable: bool = False

    @property
    def exists(self) -> bool:
        return bool(self.workdir) and Path(self.workdir).exists()


def shadow_repos(layout: Layout) -> list[ShadowRepo]:
    """Every pre-v2 repository directly under the base, by name.

    Hermes takes any directory with a HEAD file for one; rewindfs also wants the
    HERMES_WORKDIR marker or an `objects` directory beside it, so a stray directory
    holding a file named HEAD is never deleted as a repository.
    """
    try:
        children = sorted(layout.base.iterdir())
    except OSError:
        return []
    found = []
    for child in children:
        if child.name in RESERVED or child.name.startswith(PREFIX) or child.is_symlink() \
                or not child.is_dir() or not (child / "HEAD").is_file():
            continue
        marker = child / "HERMES_WORKDIR"
        if not marker.exists() and not (child / "objects").is_dir():
            continue
        workdir, unreadable = None, False
        if marker.exists():
            try:
                workdir = marker.read_text(encoding="utf-8-sig").strip() or None
            except (OSError, UnicodeDecodeError):
                unreadable = True
        found.append(ShadowRepo(child, workdir, unreadable))
    return found


def judge_shadow(repo: ShadowRepo, retention_days: float, delete_orphans: bool,
                 allowlist: frozenset[str] | None = None, now: float | None = None
                 ) -> State | None:
    """ORPHAN, STALE, or None (kept) for a pre-v2 repository."""
    allowed = allowlist is None or str(repo.path) in allowlist
    if delete_orphans and allowed and repo.workdir and deleted_path(repo.workdir, None):
        return State.ORPHAN
    if retention_days > 0:
        newest = _newest_mtime(repo.path)
        cutoff = (time.time() if now is None else now) - retention_days * 86400
        if 0 < newest < cutoff:
            return State.STALE
    return None


def _newest_mtime(path: Path) -> float:
    newest = 0.0
    stack = [str(path)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    newest = max(newest, st.st_mtime)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return newest


def delete_repo(repo: ShadowRepo) -> int:
    """Delete one pre-v2 repository; returns the bytes it held."""
    size = tree_bytes(repo.path)
    shutil.rmtree(repo.path)
    return size


def migrate(layout: Layout, now: float | None = None) -> Path | None:
    """Move pre-v2 repositories into a new legacy archive; returns it, or None if there were none.

    Called when the store is created (Store.ensure holds the store lock meanwhile);
    a repository that cannot be moved stays where it is, for prune to judge.
    """
    repos = [r.path for r in shadow_repos(layout)]
    if not repos:
        return None
    archive = layout.base / (PREFIX + time.strftime(STAMP, time.localtime(now)))
    archive.mkdir(mode=0o700, exist_ok=True)
    for repo in repos:
        target = _free_name(archive / repo.name)
        try:
            os.rename(repo, target)
        except OSError as exc:
            log.warning("could not archive v1 checkpoint repository %s: %s", repo, exc)
    log.info("moved %d v1 checkpoint repositories to %s", len(repos), archive)
    return archive


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{n}")
        n += 1
    return candidate


def archives(layout: Layout) -> list[Archive]:
    """Legacy archives under the base, oldest first."""
    try:
        children = list(layout.base.iterdir())
    except OSError:
        return []
    found = []
    for child in children:
        if child.name.startswith(PREFIX) and child.is_dir() and not child.is_symlink():
            found.append(Archive(child.name, child, _created(child)))
    return sorted(found, key=lambda a: (a.created, a.name))


def _created(path: Path) -> float:
    try:
        return time.mktime(time.strptime(path.name[len(PREFIX):], STAMP))
    except ValueError:
        try:
            return path.stat().st_mtime
        except OSError:
            return time.time()


def expired(layout: Layout, retention_days: float, now: float | None = None) -> list[Archive]:
    """Archives older than `retention_days` (none when retention is 0)."""
    if retention_days <= 0:
        return []
    cutoff = (time.time() if now is None else now) - retention_days * 86400
    return [a for a in archives(layout) if a.created < cutoff]


def delete(archive: Archive) -> int:
    """Delete one archive; returns the bytes it held."""
    size = archive.size()
    shutil.rmtree(archive.path)
    return size


def clear(layout: Layout) -> tuple[int, int]:
    """Delete every legacy archive: (how many, bytes they held). One that cannot be
    deleted stays and is not counted (Hermes's clear_legacy)."""
    count = freed = 0
    for archive in archives(layout):
        try:
            freed += delete(archive)
            count += 1
        except OSError as exc:
            log.warning("could not delete legacy archive %s: %s", archive.path, exc)
    return count, freed
