"""Differences between checkpoints, or between a checkpoint and the working tree."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2
from pygit2.enums import DeltaStatus, DiffStatsFormat

from rewindfs.store.capture import DEFAULT_LIMITS, Limits, capture
from rewindfs.store.snapshot import locked
from rewindfs.store.store import Project, Store

STAT_WIDTH = 80


@dataclass
class DiffResult:
    stat: str
    patch: str
    names: list[str]
    files_changed: int
    insertions: int
    deletions: int


def between(repo: pygit2.Repository, old_tree: str, new_tree: str) -> DiffResult:
    diff = repo[old_tree].diff_to_tree(repo[new_tree])
    diff.find_similar()
    return _render(diff)


def working_tree_tree(store: Store, workdir, limits: Limits = DEFAULT_LIMITS,
                      extra_excludes: tuple[str, ...] = ()) -> str:
    """Capture the working tree as it is now (no checkpoint is recorded) and return its tree id.

    `extra_excludes` must be the ones checkpoints use: the exclude file is shared with
    them, and files only they exclude would otherwise show up as differences.
    """
    with locked(store, workdir) as project:
        return capture_locked(project, limits, extra_excludes)


def capture_locked(project: Project, limits: Limits = DEFAULT_LIMITS,
                   extra_excludes: tuple[str, ...] = (), paths: list[bytes] | None = None
                   ) -> str:
    """The working tree's tree id (with `paths`, only those captured afresh; see capture)."""
    project.store.refresh_excludes(project, extra_excludes)
    return str(capture(project, limits, paths).tree_id)


def _render(diff: pygit2.Diff) -> DiffResult:
    stats = diff.stats
    stat_text = (
        stats.format(DiffStatsFormat.FULL | DiffStatsFormat.INCLUDE_SUMMARY, STAT_WIDTH)
        if stats.files_changed
        else ""
    )
    chunks: list[str] = []
    names: list[str] = []
    for patch in diff:
        if patch is None:
            continue
        delta = patch.delta
        gone = delta.status == DeltaStatus.DELETED
        names.append(delta.old_file.path if gone else delta.new_file.path)
        chunks.append(patch.data.decode("utf-8", errors="replace"))
    return DiffResult(
        stat=stat_text.rstrip("\n"),
        patch="".join(chunks),
        names=names,
        files_changed=stats.files_changed,
        insertions=stats.insertions,
        deletions=stats.deletions,
    )
