"""A checkpoint taken with agent state and the pending external actions attached (the
Python API's and the hooks' checkpoint): `take`, then a note on the new commit
(store.history.metadata.meta says what a note holds)."""

from __future__ import annotations

import time
from typing import Any

import pygit2

from rewindfs.store.capture import secret_files
from rewindfs.store.capture.walk import DEFAULT_LIMITS, Limits
from rewindfs.store.history.chain import checkpoints
from rewindfs.store.history.metadata import actions as actions_mod
from rewindfs.store.history.metadata import notes
from rewindfs.store.history.metadata.meta import CheckpointMeta, meta_of, validate_state
from rewindfs.store.history.snapshot import (
    Recorder,
    SnapshotResult,
    locked,
    take_locked,
    tip,
)
from rewindfs.store.objects.repo import Store


def take_carrying(store: Store, workdir, reason: str, *, state: dict[str, Any] | None = None,
                  trailers: dict[str, str] | None = None, limits: Limits = DEFAULT_LIMITS,
                  extra_excludes: tuple[str, ...] = (), keep: int | None = None,
                  paths: list[bytes] | None = None,
                  recorder: Recorder | None = None) -> SnapshotResult:
    """`take`, with `state` and the pending external actions attached to the new checkpoint.

    Unchanged files with changed state still make a checkpoint (the state is what
    changed); unchanged files and no state leave the actions pending for the next one.
    `paths` (project-relative) limits the capture to those, the rest as the previous
    capture left it: for a caller that knows what changed (the agent hooks, through
    history.stamp). `recorder`: what else it records (take_locked).
    """
    state = validate_state(state)
    with locked(store, workdir) as project, actions_mod.held(store.layout, project.h16) as batch:
        repo = project.repo
        allow_empty = bool(state) and _tip_state(repo, project) != state
        when = time.time()
        result = take_locked(project, reason, limits=limits, trailers=trailers,
                             extra_excludes=extra_excludes, allow_empty=allow_empty, keep=keep,
                             paths=paths, recorder=recorder)
        if result.taken and result.commit and (state or batch.items):
            kept = {c.id for c in checkpoints(repo, project.h16)}
            meta = CheckpointMeta(state, batch.items, when)
            notes.write(repo, project.h16, result.commit, meta.to_json(), keep=kept)
            batch.clear()
        keys = secret_files.report(project)  # once per project: [] ever after
        if keys:
            result.skipped_files["private_keys"] = keys
    return result


def _tip_state(repo: pygit2.Repository, project) -> dict[str, Any] | None:
    head = tip(project)
    return meta_of(repo, project.h16, str(head.id)).state if head is not None else None
