"""Hermes v1 per-directory shadow repositories, and the archives they are moved into.

Before the shared store, Hermes kept one git directory per working directory
directly under `checkpoints/` (a `HEAD` and a `HERMES_WORKDIR` file naming the
workdir). On first use they are moved, untouched, into
`checkpoints/legacy-<YYYYmmdd-HHMMSS>/` (Hermes's own name for such archives),
where they can still be read with git; archives older than retention_days are
deleted by prune, or all at once by `rewind clear-legacy`. Only directories that
really are v1 repositories move: anything else under `checkpoints/` is left alone.
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
    """v1 shadow repositories directly under the base, by name."""
    try:
        children = sorted(layout.base.iterdir())
    except OSError:
        return []
    return [c for c in children
            if c.name not in RESERVED and not c.name.startswith(PREFIX) and _is_v1(c)]


def _is_v1(path: Path) -> bool:
    return (path.is_dir() and not path.is_symlink() and (path / "HEAD").is_file()
            and (path / "HERMES_WORKDIR").is_file())


def migrate(layout: Layout, now: float | None = None) -> Path | None:
    """Move v1 repositories into a new legacy archive; returns it, or None if there were none.

    The caller serialises migrations (Store.ensure holds the store lock); a
    repository that cannot be moved stays where it is and is tried again next time.
    """
    repos = v1_repos(layout)
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
