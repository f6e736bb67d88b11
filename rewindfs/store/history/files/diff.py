"""Differences between checkpoints, or between a checkpoint and the working tree."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pygit2
from pygit2.enums import DeltaStatus

from rewindfs.store.history.files import diffstat
from rewindfs.store.history.files.diffstat import FileStat

if TYPE_CHECKING:  # the capture's modules load only to diff against the working tree
    from rewindfs.store.capture.walk import Limits
    from rewindfs.store.objects.repo import Project, Store

STAT_WIDTH = 80  # git's width for --stat when not on a terminal


@dataclass
class DiffResult:
    stat: str  # `git diff --stat` at STAT_WIDTH columns
    patch: str
    names: list[str]
    files_changed: int
    insertions: int
    deletions: int
    files: list[FileStat] = field(default_factory=list)  # per file, for other widths
    patches: list[str] = field(default_factory=list)  # per file, same order as `files`


def between(repo: pygit2.Repository, old_tree: str, new_tree: str,
            paths: list[bytes] | None = None) -> DiffResult:
    """Changes from `old_tree` to `new_tree`, renames paired as git pairs them; with
    `paths`, only files at or under those project-relative paths."""
    diff = repo[old_tree].diff_to_tree(repo[new_tree])
    diff.find_similar()
    return _render(diff, paths)


def _wanted(path: bytes, paths: list[bytes] | None) -> bool:
    if not paths:
        return True
    return any(not p or path == p or path.startswith(p.rstrip(b"/") + b"/") for p in paths)


def working_tree_tree(store: Store, workdir, limits: Limits | None = None,
                      extra_excludes: tuple[str, ...] = (), *, create: bool = True) -> str:
    """Capture the working tree as it is now (no checkpoint is recorded) and return its tree id.

    `extra_excludes` must be the ones checkpoints use: the exclude file is shared with
    them, and files only they exclude would otherwise show up as differences. `create`
    False: NotFound rather than a store (or project) made to hold the capture.
    """
    from rewindfs.store.history.snapshot import locked

    with locked(store, workdir, create=create) as project:
        return capture_locked(project, limits, extra_excludes)


def capture_locked(project: Project, limits: Limits | None = None,
                   extra_excludes: tuple[str, ...] = (), paths: list[bytes] | None = None
                   ) -> str:
    """The working tree's tree id (with `paths`, only those captured afresh; see capture)."""
    from rewindfs.store.capture.walk import DEFAULT_LIMITS
    from rewindfs.store.capture.workdir import capture

    project.store.refresh_excludes(project, extra_excludes)
    return str(capture(project, limits or DEFAULT_LIMITS, paths).tree_id)


def _render(diff: pygit2.Diff, paths: list[bytes] | None = None) -> DiffResult:
    chunks: list[str] = []
    names: list[str] = []
    files: list[FileStat] = []
    for patch in diff:
        if patch is None:
            continue
        delta = patch.delta
        old, new = delta.old_file, delta.new_file
        if not (_wanted(old.raw_path, paths) or _wanted(new.raw_path, paths)):
            continue
        gone = delta.status == DeltaStatus.DELETED
        names.append(os.fsdecode(old.raw_path if gone else new.raw_path))
        _, added, deleted = patch.line_stats
        files.append(FileStat(old.raw_path, new.raw_path, added, deleted, delta.is_binary,
                              old.size, new.size))
        chunks.append(patch.data.decode("utf-8", errors="replace"))
    return DiffResult(
        stat=diffstat.render(files, STAT_WIDTH),
        patch="".join(chunks),
        names=names,
        files_changed=len(files),
        insertions=sum(f.added for f in files),
        deletions=sum(f.deleted for f in files),
        files=files,
        patches=chunks,
    )
