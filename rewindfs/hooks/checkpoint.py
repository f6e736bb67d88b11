"""The checkpoint a hook takes: a step of the agent's turn, named after what runs next.

The step is the agent layer's (`stepbegin`: the same begin event `begin_step` writes), so
`rewind revert TURN` and `rewind redo` work on hook turns as on the Python API's, and the
checkpoint's trailers say which agent and session it protects. It goes straight to the
store's faces rather than through CheckpointManager, whose imports (restore, the steps'
revert machinery) a hook would pay on every checkpoint without using them.

When history.stamp can name what changed since the newest checkpoint, only those paths
are captured (the rest of the tree as the last capture left it; when it proves nothing
changed, hooks.unchanged answers instead). Afterwards a detached child writes the new
checkpoint's stamp, for the next call.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rewindfs import config
from rewindfs.agent.stepbegin import append_begin, step_trailers, valid_id
from rewindfs.agent.workdir import working_dir_for_path
from rewindfs.config import capture_key
from rewindfs.hooks.payloads import ToolCall
from rewindfs.store import (
    Layout,
    Limits,
    SnapshotResult,
    Store,
    normalize_workdir,
    project_hash,
)
from rewindfs.store.history import carrying, stamp, steplog
from rewindfs.store.maintenance import Policy, auto, autocap
from rewindfs.store.remote import autopush

AGENT_TRAILER, SESSION_TRAILER = "Rewind-Agent", "Rewind-Session"


def take(call: ToolCall, reason: str, turn: str, root: str = "",
         found: tuple[str, str, list[bytes]] | None = None) -> dict[str, Any]:
    """`found`: what hooks.unchanged.changes found changed in `root` since its newest
    checkpoint."""
    settings = config.load(None, {})
    layout = Layout(settings.base)
    store = Store(layout)
    workdir = Path(root) if root else working_dir_for_path(layout, normalize_workdir(call.cwd))
    h16 = project_hash(workdir)
    step_id, turn = valid_id(f"{call.agent}:{call.call}", "step"), valid_id(turn, "turn")
    if found is None and not root and store.exists():
        found = stamp.changes(layout.store, h16, workdir, capture_key(workdir, settings.home))
    result = _checkpoint(settings, store, workdir, reason, found,
                         {AGENT_TRAILER: call.agent, SESSION_TRAILER: call.session,
                          **step_trailers(step_id, turn, "before")})
    with steplog.session(layout, result.project) as log:
        append_begin(log, step_id, turn, result.tree, result.commit)
    if settings.auto_prune:
        if result.taken:  # over the size cap: a pruner in the background
            autocap.after_checkpoint(layout, settings.max_total_size_mb)
        auto.start(layout, Policy(settings.retention_days, settings.delete_orphans,
                                  settings.max_total_size_mb), settings.min_interval_hours)
    if settings.auto_import:  # Kilo's and OpenCode's own snapshots, in a detached child
        from rewindfs.sources import auto as imports

        imports.start(settings.home, layout, workdir, settings.auto_import)
    return {"taken": result.taken, "hash": result.commit, "directory": str(workdir),
            "scoped": len(found[2]) if found else None}


def _checkpoint(settings: config.Settings, store: Store, workdir: Path, reason: str,
                found: tuple[str, str, list[bytes]] | None, trailers: dict[str, str] | None
                ) -> SnapshotResult:
    """The checkpoint (only the paths `found` names captured afresh, when it names them),
    then its stamp, written by a detached child."""
    key = capture_key(workdir, settings.home)
    started = time.time_ns()
    result = carrying.take_carrying(
        store, str(workdir), reason, trailers=trailers,
        limits=Limits(max_file_size=settings.max_file_size_bytes, max_files=settings.max_files,
                      store_cap=settings.max_total_size_mb * 1024 * 1024),
        extra_excludes=tuple(settings.extra_excludes), keep=settings.max_snapshots,
        paths=found[2] if found else None)
    if result.taken and settings.auto_push:  # queued; pushed by a detached process
        autopush.trigger(store.layout, settings.auto_push, result.project,
                         settings.auto_push_delay, settings.remote_timeout)
    if result.commit and result.tree:
        stamp.record_later(store.layout.store, result.project, workdir, result.commit,
                           result.tree, started, key, result.skipped_files,
                           found[0] if found else None)
    return result
