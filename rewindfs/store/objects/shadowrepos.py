"""Hermes's pre-v2 repositories under the checkpoint base: found, and archived on creation.

When the store is created they move into `legacy-<stamp>/`; what maintenance does with
them and with the archives later: maintenance.legacy.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from rewindfs.lazylog import logger
from rewindfs.store.objects.layout import Layout

log = logger(__name__)

PREFIX = "legacy-"
STAMP = "%Y%m%d-%H%M%S"
RESERVED = {"store", ".last_prune"}


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
