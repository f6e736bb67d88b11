"""Hermes-compatible CheckpointManager backed by the rewindfs store.

Method names, arguments, defaults, result dictionaries and error messages follow
upstream Hermes Agent's `tools.checkpoint_manager.CheckpointManager`, so a harness
can swap it in (rewindfs.hermes is the module to import in its place). Extra keys
are added, never removed or renamed.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rewindfs import restore as restore_mod
from rewindfs import store as st
from rewindfs.agent import bounded, checks
from rewindfs.agent import state as agent_state
from rewindfs.agent.results import api_restore_dict, checkpoint_dict
from rewindfs.agent.steps import RevertPreview, StepRecorder
from rewindfs.agent.workdir import working_dir_for_path
from rewindfs.errors import NotFound, Refused, RewindError
from rewindfs.lazylog import logger
from rewindfs.store.capture import secret_files
from rewindfs.store.history import carrying, ledger, projects
from rewindfs.store.maintenance import Policy, auto, autocap
from rewindfs.store.remote import autopush

log = logger(__name__)
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
        checkpoint_stall_seconds: float = bounded.STALL_SECONDS,
        checkpoint_limit_seconds: float = bounded.LIMIT_SECONDS,
        auto_push: str | None = None, auto_push_delay: float = 5.0, remote_timeout: float = 60.0,
        store: st.Store | None = None,
    ):
        """`store`: a store already open on `base` to use rather than a handle of its own
        (one handle per process: the project locks of two would exclude each other)."""
        self.enabled = enabled
        self.max_snapshots = max(1, int(max_snapshots))
        self.max_total_size_mb = max(0, int(max_total_size_mb))
        self.max_file_size_mb = max(0.0, float(max_file_size_mb))
        self._base = Path(base).expanduser() if base else None
        self._store: st.Store | None = store
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
        # ensure_checkpoint's bound: given up after this long without progress, or in all
        self._runner = bounded.Runner(checkpoint_stall_seconds, checkpoint_limit_seconds)
        self.auto_push, self.push_timing = auto_push, (auto_push_delay, remote_timeout)

    # -- where the store is -------------------------------------------------------

    @property
    def store(self) -> st.Store:
        """The store under `base`, or else under the Hermes home as it is now: without
        `base` the home is looked up on every use, as Hermes does (one process may serve
        several profiles, HERMES_HOME, over its life)."""
        base = self._base or self._default_base()
        if self._store is None or self._store.layout.base != base:
            self._store = st.Store(st.Layout(base))
        return self._store

    @property
    def layout(self) -> st.Layout:
        return self.store.layout

    def _default_base(self) -> Path:
        return st.Layout.for_home().base

    # -- turn lifecycle -----------------------------------------------------------

    def new_turn(self) -> None:
        """Start a new agent turn: each directory may be checkpointed once again."""
        self._checkpointed_dirs.clear()

    def ensure_checkpoint(self, working_dir: str, reason: str = "auto") -> bool:
        """Checkpoint `working_dir` once per turn. True when a checkpoint was written.

        Never raises and never blocks the agent's tool call: a failed checkpoint is
        logged, and one that makes no progress for `checkpoint_stall_seconds` (or runs
        `checkpoint_limit_seconds` in all) is given up on and cancelled (agent.bounded).
        """
        if not self.enabled:
            return False
        try:
            abs_dir = str(st.normalize_workdir(working_dir))
            if abs_dir in self._checkpointed_dirs:
                return False
            if self._runner.busy(abs_dir):
                log.warning("checkpoint of %s skipped: an earlier one is still stuck", abs_dir)
                return False
            self._checkpointed_dirs.add(abs_dir)
            result = self._runner.run(abs_dir, lambda: self.take(abs_dir, reason))
            if result.skipped_files.get("private_keys"):
                log.warning("%s: %s", abs_dir,
                            secret_files.warning(result.skipped_files["private_keys"]))
            self._maybe_auto_prune()
            return result.taken
        except RewindError as exc:  # a guard's refusal (over the size cap) is said
            (log.warning if isinstance(exc, Refused) else log.debug)(
                "checkpoint of %s skipped: %s", working_dir, exc)
        except bounded.GaveUp as exc:
            log.warning("checkpoint of %s given up (%s); the tool call goes on without it",
                        working_dir, exc)
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
             trailers: dict[str, str] | None = None, state: dict[str, Any] | None = None,
             recorder: Any = None) -> st.SnapshotResult:
        """Take a checkpoint now (raises RewindError on refusal or store failure: one that
        alone would take more than max_total_size_mb is refused).

        It carries `state` and the external actions recorded since the last checkpoint
        that carried any (store.history.metadata.meta); `recorder`: the repository's state.
        Near the size cap, a pruner starts in the background (store.maintenance.autocap).
        """
        # (restores, diffs and pre-rollback snapshots: `limits`, never refused for the cap)
        limits = replace(self.limits, store_cap=self.max_total_size_mb * 1024 * 1024)
        result = carrying.take_carrying(
            self.store, working_dir, reason, state=state, limits=limits,
            trailers=trailers, extra_excludes=self.extra_excludes, keep=self.max_snapshots,
            recorder=recorder)
        self.last_result = result
        if result.taken and self.auto_push:  # queued; never raises
            autopush.trigger(self.layout, self.auto_push, result.project, *self.push_timing)
        if result.taken and self.auto_prune:  # never raises, never waits
            autocap.after_checkpoint(self.layout, self.max_total_size_mb)
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
        return self._listing(st.project_hash(working_dir), working_dir)

    def list_all_checkpoints(self) -> list[dict[str, Any]]:
        """Every project's checkpoints, newest first; each entry names its `workdir`."""
        if not self.store.exists():
            return []
        out = []
        for record in projects.list_records(self.layout):
            for entry in self._listing(record.h16, str(record.workdir)):
                entry["workdir"] = str(record.workdir)
                out.append(entry)
        out.sort(key=lambda e: e["time"], reverse=True)
        return out

    def _listing(self, h16: str, what: str) -> list[dict[str, Any]]:
        try:
            if not self.store.exists():
                return []
            repo = self.store.repo
            return [checkpoint_dict(c, st.stats(repo, c)) for c in st.checkpoints(repo, h16)]
        except RewindError as exc:
            log.debug("list of %s failed: %s", what, exc)
            return []

    def diff(self, working_dir: str, commit_hash: str) -> dict[str, Any]:
        """Changes from checkpoint `commit_hash` to the working tree as it is now."""
        error = checks.reference_error(commit_hash)
        if error:
            return {"success": False, "error": error}
        try:
            found = self._target(working_dir, commit_hash)
            if isinstance(found, dict):
                return found
            repo, target = found
            now = st.working_tree_tree(self.store, working_dir, self.limits,
                                       self.extra_excludes)
            result = st.diff_between(repo, target.tree_id, now)
        except RewindError as exc:
            return {"success": False, "error": str(exc)}
        return {"success": True, "stat": result.stat, "diff": result.patch,
                "files": result.names, "hash": target.id}

    def session_diff(self, working_dir: str) -> dict[str, Any]:
        """Everything changed in `working_dir` since its oldest kept checkpoint.

        The result is `diff`'s, plus `baseline` (that checkpoint's hash) and `empty`
        when nothing differs; with no checkpoint at all it is an empty success.
        """
        listed = self.list_checkpoints(working_dir)
        if not listed:
            return {"success": True, "stat": "", "diff": "", "empty": True}
        baseline = listed[-1]["hash"]
        result = self.diff(working_dir, baseline)
        if result.get("success"):
            result.setdefault("baseline", baseline)
            if not result["stat"] and not result["diff"]:
                result["empty"] = True
        return result

    def restore(self, working_dir: str, commit_hash: str, file_path: str | None = None,
                safe: bool = False) -> dict[str, Any]:
        """Restore the project (or one file or directory) to a checkpoint.

        Everything is restored unless `safe` (whole-project restores only): then
        only files still as the agent wrote them (see record_agent_write) are
        reverted, and files a person changed are kept and listed in
        `skipped_user_edits`. A project without any recorded agent write has nothing
        to tell them apart by: the restore is then a full one, and its result carries
        no safe-mode keys.

        A pre-rollback snapshot is taken first (it holds every file the restore
        overwrites, whatever its size); its id is returned as `pre_rollback`. Also
        returned: the target's agent `state`, and the `external_actions` taken after
        it with a `warnings` line each (a rollback does not undo them).
        """
        error = checks.reference_error(commit_hash)
        wd = st.normalize_workdir(working_dir)
        if error is None and file_path:
            error = checks.file_path_error(file_path, wd)
        if error:
            return {"success": False, "error": error}
        try:
            found = self._target(wd, commit_hash)
            if isinstance(found, dict):
                return found
            target = found[1]
            use_safe = bool(safe and not file_path and ledger.writes_since(
                self.layout, st.project_hash(wd), 0.0))
            options = restore_mod.Options(
                paths=[file_path] if file_path else None, safe=use_safe, limits=self.limits,
                extra_excludes=self.extra_excludes, delete_missing=False,
            )
            result = restore_mod.restore(self.store, wd, target, options)
            extras = agent_state.restore_report(self.store, result)
        except RewindError as exc:
            return {"success": False, "error": str(exc)}
        return api_restore_dict(result, file_path, extras)

    def record_agent_write(self, file_path: str, path: str | None = None) -> bool:
        """Note the content the agent just wrote to (or deleted at) a file, for safe restores.

        `record_agent_write(file_path)`, upstream Hermes's form: the project is the one
        `get_working_dir_for_path` finds for the file. `record_agent_write(working_dir,
        path)`: the project named, `path` relative to it or absolute inside it.
        A disabled manager records nothing and writes nothing. Never raises.
        """
        if not self.enabled:
            return False
        try:
            if path is None:
                full = Path(os.path.abspath(Path(file_path).expanduser()))
                wd = Path(self.get_working_dir_for_path(str(full)))
                # The entry itself is recorded, a link as a link: only its directory resolves.
                rel = restore_mod.project_relative(str(full.parent.resolve() / full.name), wd,
                                                   cwd=wd)
            else:
                wd = st.normalize_workdir(file_path)
                rel = restore_mod.project_relative(path, wd, cwd=wd)
            if not rel:
                return False
            ledger.record(self.layout, st.project_hash(wd), wd, rel)
            return True
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never fail the agent's write
            log.debug("agent write of %s not recorded: %s", path or file_path, exc)
            return False

    def get_working_dir_for_path(self, file_path: str) -> str:
        """The project directory a file belongs to (see rewindfs.agent.workdir)."""
        return str(working_dir_for_path(self.layout, file_path))

    # -- agent steps, turns and redo (rewindfs.agent.steps) ------------------------

    def begin_step(self, working_dir: str, step_id: str, turn_id: str, session: str = ""
                   ) -> dict[str, Any]:
        """Record the files before a model step of `session` (checkpointed if changed)."""
        if not self.enabled:
            return {"success": False, "error": "checkpoints are disabled"}
        return _result(self.steps.begin, working_dir, step_id, turn_id, session,
                       never_raise=True)

    def end_step(self, working_dir: str, step_id: str) -> dict[str, Any]:
        """Record the files after the step and which ones it changed."""
        if not self.enabled:
            return {"success": False, "error": "checkpoints are disabled"}
        return _result(self.steps.end, working_dir, step_id, never_raise=True)

    def revert_to(self, working_dir: str, turn_or_step: str, session: str | None = None,
                  confirmed: RevertPreview | None = None) -> dict[str, Any]:
        """Put back the files changed by that step (or turn) and every later one of its
        session (a file another session changed too is kept: `kept`). `turns` in the
        result names the turns involved, so the conversation can follow. `confirmed`: its
        `steps.preview_revert`, as shown: done as shown, or refused."""
        return _result(self.steps.revert_to, working_dir, turn_or_step, session, confirmed)

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

    def _target(self, working_dir, reference: str):
        """(repo, checkpoint) named by `reference`, or an error dict in Hermes's words."""
        if not self.store.exists():
            return {"success": False, "error": "No checkpoints exist for this directory"}
        repo = self.store.repo
        try:
            return repo, st.resolve(repo, st.project_hash(working_dir), reference)
        except NotFound as exc:
            return {"success": False, "error": checks.not_found(reference), "detail": str(exc)}


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
