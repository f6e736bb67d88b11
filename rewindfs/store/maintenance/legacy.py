"""Hermes's pre-v2 per-directory shadow repositories, and the legacy archives they go into.

Before the shared store, Hermes kept one git directory per working directory
directly under `checkpoints/` (a `HEAD`, and a `HERMES_WORKDIR` file naming the
workdir). As Hermes does, they are moved, untouched, into
`checkpoints/legacy-<YYYYmmdd-HHMMSS>/` when the store is created (objects.shadowrepos);
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

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from rewindfs.lazylog import logger
from rewindfs.store.history.verdict import State, deleted_path
from rewindfs.store.maintenance.sizes import tree_bytes
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.shadowrepos import PREFIX, STAMP, ShadowRepo

log = logger(__name__)


@dataclass
class Archive:
    name: str
    path: Path
    created: float  # epoch: from the name, else the directory's mtime

    def size(self) -> int:
        return tree_bytes(self.path)


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
