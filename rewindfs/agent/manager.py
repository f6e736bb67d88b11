"""Hermes-compatible CheckpointManager backed by the rewindfs store.

Method names, arguments and result dictionaries follow Hermes Agent's
`tools.checkpoint_manager.CheckpointManager`, so a harness can swap it in.
Extra keys are added, never removed or renamed.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from rewindfs import restore as restore_mod
from rewindfs import store as st
from rewindfs.agent import state as agent_state
from rewindfs.agent.steps import StepRecorder
from rewindfs.agent.workdir import project_root
from rewindfs.errors import RewindError
from rewindfs.store import meta, projects
from rewindfs.store.maintenance import auto
from rewindfs.store.maintenance.sweep import Policy

log = logging.getLogger(__name__)
AUTO_PRUNE_RECHECK_SECONDS = 600.0  # a long-lived agent looks at .last_prune this often


class CheckpointManager:
    def __init__(
        self,
        enabled: bool = False,
        max_snapshots: int = 20,
        max_total_size_mb: int = 500,
        max_file_size_mb: float = 10,
        base: str | os.PathLike[str] | None = None,
        *,
        max_files: int = 50_000,
        extra_excludes: tuple[str, ...] = (),
        auto_prune: bool = True,
        retention_days: float = 7,
        delete_orphans: bool = True,
        min_interval_hours: float = 24,
    ):
        self.enabled = enabled
        self.max_snapshots = max(1, int(max_snapshots))
        self.max_total_size_mb = max(0, int(max_total_size_mb))
        self.max_file_size_mb = max(0.0, float(max_file_size_mb))
        self.layout = st.Layout(Path(base).expanduser()) if base else st.Layout.for_home()
        self.store = st.Store(self.layout)
        self.limits = st.Limits(
            max_file_size=int(self.max_file_size_mb * 1024 * 1024), max_files=max_files
        )
        self.extra_excludes = tuple(extra_excludes)
        self._checkpointed_dirs: set[str] = set()
        self.last_result: st.SnapshotResult | None = None
        self.steps = StepRecorder(self)
        # The automatic sweep (store.maintenance.auto): config keys of the same names.
        self.auto_prune = auto_prune
        self.prune_policy = Policy(retention_days, delete_orphans, self.max_total_size_mb)
        self.min_interval_hours = min_interval_hours
        self._next_prune_check = 0.0

    # -- turn lifecycle -----------------------------------------------------------

    def new_turn(self) -> None:
        """Start a new agent turn: each directory may be checkpointed once again."""
        self._checkpointed_dirs.clear()

    def ensure_checkpoint(self, working_dir: str, reason: str = "auto") -> bool:
        """Checkpoint `working_dir` once per turn. True when a checkpoint was written.

        Never raises: a failed checkpoint must not block the agent's tool call.
        """
        if not self.enabled:
            return False
        try:
            abs_dir = str(st.normalize_workdir(working_dir))
            if abs_dir in self._checkpointed_dirs:
                return False
            self._checkpointed_dirs.add(abs_dir)
            result = self.take(abs_dir, reason)
            self._maybe_auto_prune()
            return result.taken
        except RewindError as exc:
            log.debug("checkpoint of %s skipped: %s", working_dir, exc)
        except Exception:  # noqa: BLE001 - the agent must never see a checkpoint failure
            log.exception("checkpoint of %s failed", working_dir)
        return False

    def _maybe_auto_prune(self) -> None:
        """Start the automatic sweep if due; costs the checkpoint one thread start at most."""
        now = time.monotonic()
        if not self.auto_prune or now < self._next_prune_check:
            return
        self._next_prune_check = now + AUTO_PRUNE_RECHECK_SECONDS
        auto.start(self.layout, self.prune_policy, self.min_interval_hours)

    # -- explicit operations ------------------------------------------------------

    def take(self, working_dir: str, reason: str = "checkpoint",
             trailers: dict[str, str] | None = None,
             state: dict[str, Any] | None = None) -> st.SnapshotResult:
        """Take a checkpoint now (raises RewindError on refusal or store failure).

        It carries `state` and the external actions recorded since the last
        checkpoint that carried any (see store.meta).
        """
        result = meta.take_carrying(
            self.store, working_dir, reason, state=state, limits=self.limits,
            trailers=trailers, extra_excludes=self.extra_excludes, keep=self.max_snapshots,
        )
        self.last_result = result
        return result

    def checkpoint(self, working_dir: str, reason: str = "checkpoint",
                   label: str | None = None,
                   state: dict[str, Any] | None = None) -> dict[str, Any]:
        """Take a checkpoint (even when checkpoints are disabled) and optionally label it.

        `state` is named JSON documents (kanban, goal, memory_index, ...) kept with
        the checkpoint outside its file tree; `restore` hands them back.
        """
        try:
            if label:
                st.validate_label(label)  # a bad name must not leave an unlabelled checkpoint
            result = self.take(working_dir, reason, state=state)
            if label:
                if result.commit is None:
                    raise RewindError("nothing to label: the project has no files to checkpoint")
                st.set_label(self.store, result.project, label, result.commit)
        except RewindError as exc:
            return {"success": False, "error": str(exc)}
        return {
            "success": True,
            "taken": result.taken,
            "hash": result.commit,
            "short_hash": result.commit[:8] if result.commit else None,
            "label": label,
            "skipped_files": result.skipped_files,
            "directory": result.workdir,
        }

    def list_checkpoints(self, working_dir: str) -> list[dict[str, Any]]:
        """Checkpoints of `working_dir`, newest first, with per-checkpoint change stats."""
        try:
            repo, h16 = self._history(working_dir)
            history = st.checkpoints(repo, h16) if repo is not None else []
            return [checkpoint_dict(c, st.stats(repo, c)) for c in history]
        except RewindError as exc:
            log.debug("list of %s failed: %s", working_dir, exc)
            return []

    def diff(self, working_dir: str, commit_hash: str) -> dict[str, Any]:
        """Changes from checkpoint `commit_hash` to the working tree as it is now."""
        try:
            repo, h16 = self._history(working_dir)
            if repo is None:
                return {"success": False, "error": "No checkpoints exist for this directory"}
            target = st.resolve(repo, h16, commit_hash)
            now = st.working_tree_tree(self.store, working_dir, self.limits,
                                       self.extra_excludes)
            result = st.diff_between(repo, target.tree_id, now)
        except RewindError as exc:
            return {"success": False, "error": str(exc)}
        return {"success": True, "stat": result.stat, "diff": result.patch,
                "files": result.names, "hash": target.id}

    def restore(self, working_dir: str, commit_hash: str, file_path: str | None = None
                ) -> dict[str, Any]:
        """Restore the project (or one file or directory) to a checkpoint.

        A pre-rollback snapshot is taken first; its id is returned as `pre_rollback`.
        A full restore is safe (keeps files a person edited since the agent wrote
        them) when the agent-write ledger has entries since the checkpoint.
        Also returned: the target's agent `state`, and the `external_actions` taken
        after it with a `warnings` line each (a rollback does not undo them).
        """
        options = restore_mod.Options(
            paths=[file_path] if file_path else None, limits=self.limits,
            extra_excludes=self.extra_excludes, delete_missing=False,
        )
        try:
            result = restore_mod.restore(self.store, working_dir, commit_hash, options)
            extras = agent_state.restore_report(self.store, result)
        except RewindError as exc:
            return {"success": False, "error": str(exc)}
        return {**restore_dict(result, file_path), **extras}

    def record_agent_write(self, working_dir: str, path: str) -> bool:
        """Note the content the agent just wrote to (or deleted at) `path`, for safe restores."""
        try:
            wd = st.normalize_workdir(working_dir)
            rel = restore_mod.project_relative(path, wd, cwd=wd)
            if not rel:
                return False
            st.ledger.record(self.layout, st.project_hash(wd), wd, rel)
            return True
        except (RewindError, OSError) as exc:
            log.debug("agent write of %s not recorded: %s", path, exc)
            return False

    def get_working_dir_for_path(self, file_path: str) -> str:
        """The project directory a file belongs to (see rewindfs.agent.workdir)."""
        registered = set()
        if self.store.exists():
            registered = {r.workdir for r in projects.list_records(self.layout)}
        return str(project_root(file_path, registered))

    # -- agent steps, turns and redo (rewindfs.agent.steps) ------------------------

    def begin_step(self, working_dir: str, step_id: str, turn_id: str) -> dict[str, Any]:
        """Record the files before a model step (a checkpoint only if they changed)."""
        if not self.enabled:
            return {"success": False, "error": "checkpoints are disabled"}
        return _result(self.steps.begin, working_dir, step_id, turn_id, never_raise=True)

    def end_step(self, working_dir: str, step_id: str) -> dict[str, Any]:
        """Record the files after the step and which ones it changed."""
        if not self.enabled:
            return {"success": False, "error": "checkpoints are disabled"}
        return _result(self.steps.end, working_dir, step_id, never_raise=True)

    def revert_to(self, working_dir: str, turn_or_step: str) -> dict[str, Any]:
        """Put back the files changed by that step (or turn) and every later one.

        `turns` in the result names the turns involved, so the conversation can follow.
        """
        return _result(self.steps.revert_to, working_dir, turn_or_step)

    def unrevert(self, working_dir: str) -> dict[str, Any]:
        """Redo: the files as they were just before the last revert."""
        return _result(self.steps.unrevert, working_dir)

    # -- agent state and external actions (rewindfs.agent.state) -------------------

    def record_action(self, working_dir: str, kind: str, id: str | int, summary: str = "",
                      reversible: bool = False) -> dict[str, Any]:
        """Note an action outside the files (e.g. `github.pr.opened`, `1234`) that no
        rollback can undo; the next checkpoint carries it, and restores to earlier
        checkpoints warn about it."""
        def record() -> dict[str, Any]:
            action = agent_state.record_action(self.layout, working_dir, kind, id, summary,
                                               reversible)
            return {"success": True, "action": action.to_json()}

        return _result(record)

    def state_of(self, working_dir: str, ref: str = "latest") -> dict[str, Any]:
        """The state documents and carried actions of checkpoint `ref`."""
        return _result(lambda: {"success": True,
                                **agent_state.state_of(self.store, working_dir, ref)})

    # -- helpers -------------------------------------------------------------------

    def _history(self, working_dir: str):
        """(store repo, project hash), or (None, hash) when the store does not exist yet."""
        h16 = st.project_hash(working_dir)
        if not self.store.exists():
            return None, h16
        return self.store.repo, h16


def _result(fn, *args: Any, never_raise: bool = False) -> dict[str, Any]:
    """`fn(*args)`, with a RewindError (and with `never_raise`, anything) as an error dict."""
    try:
        return fn(*args)
    except RewindError as exc:
        return {"success": False, "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - step bookkeeping must not break the agent
        if not never_raise:
            raise
        log.exception("%s failed", getattr(fn, "__name__", "step"))
        return {"success": False, "error": f"internal error: {exc}"}


def checkpoint_dict(cp: st.Checkpoint, stats: st.Stats | None) -> dict[str, Any]:
    """Hermes's list entry, plus rewindfs's extra keys."""
    return {
        "hash": cp.id,
        "short_hash": cp.short,
        "timestamp": cp.timestamp,
        "reason": cp.reason,
        "files_changed": stats.files_changed if stats else 0,
        "insertions": stats.insertions if stats else 0,
        "deletions": stats.deletions if stats else 0,
        "number": cp.number,
        "labels": cp.labels,
        "trailers": cp.trailers,
    }


def names(paths) -> list[str]:
    return [os.fsdecode(p) for p in paths]


def restore_dict(result: restore_mod.RestoreResult, file_path: str | None) -> dict[str, Any]:
    """Hermes's restore result, plus what rewindfs knows about the restore."""
    outcome = result.outcome
    out: dict[str, Any] = {
        "success": result.success,
        "restored_to": result.target.short,
        "reason": result.target.reason,
        "directory": str(result.directory),
    }
    if file_path:
        out["file"] = file_path
    out.update(
        restored_files=names(outcome.written) if outcome else [],
        deleted_files=names(outcome.deleted) if outcome else [],
        skipped_user_edits=names(result.plan.kept_user_edits),
        kept_not_agent=names(result.plan.kept_not_agent),
        untouched=names(result.plan.untouched),
        failed=[{"path": os.fsdecode(p), "error": e} for p, e in outcome.failed] if outcome else [],
        not_attempted=names(outcome.not_attempted) if outcome else [],
        pre_rollback=result.pre_rollback,
        hash=result.target.id,
        safe=result.safe,
        turn_id=result.target.trailers.get("Rewind-Turn"),
        step_id=result.target.trailers.get("Rewind-Step"),
    )
    if not result.success and outcome is not None:
        undone = len(outcome.failed) + len(outcome.not_attempted)
        out["error"] = (f"restore incomplete: {undone} file(s) not restored; the pre-rollback "
                        f"snapshot {(result.pre_rollback or '')[:8]} holds the previous state "
                        "(rewind undo)")
    return out
