"""The checkpoint a hook takes: a step of the agent's turn, named after what runs next, or
(the agent's after event) the files once that tool call is done.

The step is the agent layer's (`stepbegin`: the same begin event `begin_step` writes, and
the after event that ends it), so `rewind revert TURN` and `rewind redo` work on hook
turns as on the Python API's, a session's alone; the checkpoint's trailers say which agent
and session it protects. The capture and its event are made under the step log's lock, so
the log holds the states of every session in the order they were captured
(rewindfs.agent.timeline). It goes straight to the store's faces rather than through
CheckpointManager, whose imports (restore, the steps' revert machinery) a hook would pay
on every checkpoint without using them.

Before a command that can destroy the project's own `.git` (agent.classify.gitstate),
the checkpoint records the repository too (store.projectgit), within HOOK_GIT_SECONDS
(and half the hook's deadline); what it recorded or why it could not is logged.

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
from rewindfs.agent.stepbegin import (
    AGENT_TRAILER,
    SESSION_TRAILER,
    log_call,
    step_trailers,
    valid_id,
)
from rewindfs.agent.workdir import hook_project
from rewindfs.config import capture_key
from rewindfs.errors import Refused
from rewindfs.hooks import hooklog
from rewindfs.hooks.payloads import AFTER, ToolCall
from rewindfs.store import (
    Layout,
    Limits,
    SnapshotResult,
    Store,
    normalize_workdir,
    project_hash,
    working_tree_tree,
)
from rewindfs.store.capture import changesource
from rewindfs.store.history import carrying, stamp, steplog
from rewindfs.store.maintenance import Policy, auto, autocap
from rewindfs.store.remote import autopush

HOOK_GIT_SECONDS = 8.0  # a hook's copy of the repository's new objects, at most


def take(call: ToolCall, reason: str, turn: str, root: str = "",
         found: tuple[str, str, list[bytes]] | None = None) -> dict[str, Any]:
    """`found`: what hooks.unchanged.changes found changed in `root` since its newest
    checkpoint."""
    settings = config.load(None, {})
    layout = Layout(settings.base)
    store = Store(layout)
    workdir = Path(root) if root else hook_project(layout, normalize_workdir(call.cwd))
    h16 = project_hash(workdir)
    step_id, turn = valid_id(f"{call.agent}:{call.call}", "step"), valid_id(turn, "turn")
    if found is None and not root and store.exists() and not changesource.active():
        found = stamp.changes(layout.store, h16, workdir, capture_key(workdir, settings.home))
    # (the repository's state: before a command that can destroy it, not after it ran)
    recorder = _recorder(call, settings) if call.phase != AFTER else None
    with steplog.session(layout, h16) as log:
        result = _checkpoint(settings, store, workdir, reason, found,
                             {AGENT_TRAILER: call.agent, SESSION_TRAILER: call.session,
                              **step_trailers(step_id, turn, call.phase)}, recorder)
        log_call(log, call, step_id, turn, result.tree, result.commit, str(workdir))
    if recorder is not None and recorder.note():
        hooklog.write(call.agent, hooklog.INFO, f"{workdir}: {recorder.note()}")
    if settings.auto_prune:
        if result.taken:  # over the size cap: a pruner in the background
            autocap.after_checkpoint(layout, settings.max_total_size_mb)
        auto.start(layout, Policy(settings.retention_days, settings.delete_orphans,
                                  settings.max_total_size_mb), settings.min_interval_hours)
    if settings.auto_import:  # Kilo's and OpenCode's own snapshots, in a detached child
        from rewindfs.sources import auto as imports

        imports.start(settings.home, layout, workdir, settings.auto_import)
    from rewindfs.hooks import leftout

    return {"taken": result.taken, "hash": result.commit, "directory": str(workdir),
            "scoped": len(found[2]) if found else None,
            "left_out": leftout.of_checkpoint(call.command, workdir, result.skipped_files,
                                              result.sizes),
            "watched": result.grafted,
            # (why the repository's state could not be recorded: said to the user)
            "git_refused": recorder.recorded.refused if recorder is not None else None}


def workdir_of(call: ToolCall) -> Path | None:
    """The project a tool call's directory belongs to (None: none to checkpoint: in no
    project, or the home directory or above, which a checkpoint refuses)."""
    settings = config.load(None, {})
    try:
        return hook_project(Layout(settings.base), normalize_workdir(call.cwd))
    except (OSError, ValueError, Refused):
        return None


def limits() -> tuple[int, int]:
    settings = config.load(None, {})
    return settings.max_file_size_bytes, settings.max_files


def session_start(call: ToolCall, workdir: Path) -> None:
    """A session's first capture, in the background (resident.server): the project as the
    agent found it, its objects written and the watch's base, but no checkpoint recorded.
    The session's first command then records its "before" at the cost of what changed
    since (it waits for this capture: they share the project's lock)."""
    settings = config.load(None, {})
    working_tree_tree(Store(Layout(settings.base)), workdir, _limits(settings),
                      tuple(settings.extra_excludes))


def _limits(settings: config.Settings) -> Limits:
    return Limits(max_file_size=settings.max_file_size_bytes, max_files=settings.max_files,
                  store_cap=settings.max_total_size_mb * 1024 * 1024)


def _recorder(call: ToolCall, settings: config.Settings) -> Any:
    """The repository's state recorder, when the call can destroy it (a command the helper
    got cut short is doubted: helperwire.MAX_COMMAND)."""
    from rewindfs.agent.classify.gitstate import destroys_git_state
    from rewindfs.resident.wire import MAX_COMMAND

    if not destroys_git_state(call.command, MAX_COMMAND):
        return None
    from rewindfs.store.projectgit import Recorder

    # Within the hook's deadline (REWIND_HOOK_TIMEOUT, read by hooks.entry): a copy that
    # would take longer is cut short and said, and the files' checkpoint is still taken.
    deadline = hooklog.seconds("REWIND_HOOK_TIMEOUT", 2 * HOOK_GIT_SECONDS, float("inf"))
    return Recorder(settings.git_bounds(seconds=min(HOOK_GIT_SECONDS, deadline / 2)))


def _checkpoint(settings: config.Settings, store: Store, workdir: Path, reason: str,
                found: tuple[str, str, list[bytes]] | None, trailers: dict[str, str] | None,
                recorder: Any = None) -> SnapshotResult:
    """The checkpoint (only the paths `found` names captured afresh, when it names them),
    then its stamp, written by a detached child."""
    key = capture_key(workdir, settings.home)
    started = time.time_ns()
    result = carrying.take_carrying(
        store, str(workdir), reason, trailers=trailers,
        limits=_limits(settings),
        extra_excludes=tuple(settings.extra_excludes), keep=settings.max_snapshots,
        paths=found[2] if found else None, recorder=recorder)
    if result.taken and settings.auto_push:  # queued; pushed by a detached process
        autopush.trigger(store.layout, settings.auto_push, result.project,
                         settings.auto_push_delay, settings.remote_timeout)
    if result.commit and result.tree and not changesource.active():  # (else the watch knows)
        stamp.record_later(store.layout.store, result.project, workdir, result.commit,
                           result.tree, started, key, result.skipped_files,
                           found[0] if found else None)
    return result
