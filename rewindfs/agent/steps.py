"""Agent steps and turns: record what each step changed, revert to before a step or turn, redo.

A harness brackets each model step with `begin_step` / `end_step`. Both take a
checkpoint of the project, which writes nothing when the files are as the newest
checkpoint has them, so a step that changed nothing costs two captures and no
commit. The step log (store.history.metadata.steplog) records the trees before and after, and the
files the step changed.

`revert_to(step or turn)` puts back, for every file changed by that step and the
steps after it, the content the file had before the first of those steps that
changed it; files those steps created are deleted, and every other file (one a
person edited outside any step, say) is left alone. It is a scoped restore, so
it takes a pre-rollback snapshot and is journalled like any other (`rewind undo`
works on it). `unrevert` (redo) puts the reverted files back as they were just
before the revert. Reverts stack; a new step after a revert discards the reverted
steps, as chat agents discard the messages after the point they rewound to. A revert
(or redo) taken back by `rewind undo` counts as never made: its steps are there to
revert again.

Results name the turns involved, so the harness can rewind the conversation to match.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rewindfs import restore as restore_mod
from rewindfs import store as st
from rewindfs.agent.stepbegin import (
    append_begin,
    step_trailers,
    valid_id,
)
from rewindfs.agent.timeline import (
    OPEN,
    REVERTED,
    Step,
    Timeline,
    replayed,
    timeline_of,
)
from rewindfs.errors import NotFound, Refused
from rewindfs.store.history import compose, load, steplog, trees
from rewindfs.store.objects import writers


@dataclass
class RevertPreview:
    """What a revert would do: its restore's plan (None: no file to put back), the steps
    and turns it takes back."""

    plan: restore_mod.RestoreResult | None
    steps: list[str]
    turns: list[str]


class Manager(Protocol):
    """What the steps use of the CheckpointManager that owns them."""

    limits: st.Limits
    extra_excludes: tuple[str, ...]

    @property
    def store(self) -> st.Store: ...

    def take(self, working_dir: str, reason: str = ...,
             trailers: dict[str, str] | None = ...) -> st.SnapshotResult: ...


class StepRecorder:
    """The step API of CheckpointManager; raises RewindError (the manager turns it into dicts)."""

    def __init__(self, manager: Manager):
        self.manager = manager

    @property
    def store(self) -> st.Store:
        return self.manager.store

    def begin(self, working_dir: str, step_id: str, turn_id: str, reason: str | None = None,
              trailers: dict[str, str] | None = None) -> dict[str, Any]:
        """`reason` and `trailers` (agent, session) are for hooks that name what runs next."""
        wd, h16 = _project(working_dir)
        step_id, turn_id = valid_id(step_id, "step"), valid_id(turn_id, "turn")
        result = self.manager.take(str(wd), reason or f"before step {step_id}",
                                   trailers={**(trailers or {}),
                                             **step_trailers(step_id, turn_id, "before")})
        with steplog.session(self.store.layout, h16) as log:
            discarded = [s.id for s in self._replay(log, h16).steps.values()
                         if s.status == REVERTED]
            append_begin(log, step_id, turn_id, result.tree, result.commit)
        return {"success": True, "step_id": step_id, "turn_id": turn_id, "taken": result.taken,
                "hash": result.commit, "discarded_steps": discarded}

    def end(self, working_dir: str, step_id: str) -> dict[str, Any]:
        wd, h16 = _project(working_dir)
        with steplog.session(self.store.layout, h16) as log:
            step = self._replay(log, h16).steps.get(step_id)
            if step is None:
                raise NotFound(f"step {step_id!r} was never begun")
            taken = False
            if step.status == OPEN:
                taken = self._end(log, wd, step)
        return {"success": True, "taken": taken, "hash": step.after_commit,
                **_public(step, "step_id", "turn_id", "changed_files", "created_files",
                          "deleted_files")}

    def revert_to(self, working_dir: str, step_or_turn: str,
                  confirmed: RevertPreview | None = None) -> dict[str, Any]:
        """`confirmed`: its preview as a person saw it (`rewind ui`): the revert takes back
        those steps, as the preview showed, or is refused with nothing changed."""
        wd, h16 = _project(working_dir)
        with steplog.session(self.store.layout, h16) as log:
            timeline = self._replay(log, h16)
            timeline.find(step_or_turn)  # an unknown name changes nothing
            for step in timeline.active():
                if step.status == OPEN:  # a step still running: settle what it changed so far
                    self._end(log, wd, step)
            timeline = self._replay(log, h16)
            active = timeline.active()
            chosen = active[timeline.find(step_or_turn):]
            if confirmed is not None:
                _as_previewed(confirmed, chosen)
            first_change = _first_changes(chosen)
            result = None
            if first_change:
                # A composed target is on no ref: an explicit gc must wait until it is restored.
                with writers.writing(self.store.layout):
                    target = self._target(chosen[0], first_change)
                    shown = None if confirmed is None else \
                        confirmed.plan.plan if confirmed.plan else restore_mod.plan.Plan()
                    result = self._restore(wd, target, list(first_change), "revert",
                                           confirmed=shown)
            turns = _unique(s.turn for s in chosen)
            chosen_ids = {s.id for s in chosen}
            kept_before = [s for s in active if s.id not in chosen_ids
                           and s.turn == chosen[0].turn]
            touched, created_dirs = _touched(result)
            log.append({"event": "revert", "time": time.time(), "target": chosen[0].id,
                        "steps": [s.id for s in chosen], "turns": turns,
                        "pre_rollback": result.pre_rollback if result else None,
                        "touched": touched, "created_dirs": created_dirs})
        return {**_outcome(result), "target_step": chosen[0].id, "target_turn": chosen[0].turn,
                "reverted_steps": [s.id for s in chosen], "turns": turns,
                "partial_turn": chosen[0].turn if kept_before else None}

    def preview_revert(self, working_dir: str, step_or_turn: str) -> RevertPreview:
        """What `revert_to` would do, with nothing in the project changed (`rewind ui`
        shows it before asking): a step still running is measured against the working
        tree as it is now (`revert_to` settles it with a checkpoint first)."""
        wd, h16 = _project(working_dir)
        timeline = timeline_of(self.store.layout, h16)
        chosen = timeline.active()[timeline.find(step_or_turn):]
        now = None
        for step in chosen:
            if step.status == OPEN:
                if now is None:
                    now = st.working_tree_tree(self.store, wd, self.manager.limits,
                                               self.manager.extra_excludes)
                step.changed = [os.fsdecode(c.path)
                                for c in trees.changes(self.store.repo, step.before_tree, now)]
        first_change = _first_changes(chosen)
        plan = None
        if first_change:
            with writers.writing(self.store.layout):
                target = self._target(chosen[0], first_change)
                scope = self._scope(wd, target, list(first_change))
                if scope:
                    plan = restore_mod.dry_run(self.store, wd, target, self._options(),
                                               _scope=scope)
        return RevertPreview(plan, [s.id for s in chosen], _unique(s.turn for s in chosen))

    def unrevert(self, working_dir: str) -> dict[str, Any]:
        wd, h16 = _project(working_dir)
        with steplog.session(self.store.layout, h16) as log:
            timeline = self._replay(log, h16)
            if not timeline.reverts:
                raise NotFound("nothing to redo: no revert since the last step began")
            last = timeline.reverts[-1]
            result = None
            if last.pre_rollback and last.touched:
                before = load(self.store.repo, last.pre_rollback)
                result = self._restore(wd, before, [os.fsencode(p) for p in last.touched],
                                       "unrevert", {os.fsencode(d) for d in last.created_dirs})
            log.append({"event": "unrevert", "time": time.time(), "steps": last.steps,
                        "turns": last.turns,
                        "pre_rollback": result.pre_rollback if result else None})
        return {**_outcome(result), "restored_steps": last.steps, "turns": last.turns}

    def steps(self, working_dir: str) -> list[dict[str, Any]]:
        _, h16 = _project(working_dir)
        return [s.to_dict() for s in timeline_of(self.store.layout, h16).steps.values()]

    # -- helpers --------------------------------------------------------------------

    def _replay(self, log: steplog.StepLog, h16: str) -> Timeline:
        return replayed(self.store.layout, h16, log.events())

    def _end(self, log: steplog.StepLog, wd: Path, step: Step) -> bool:
        result = self.manager.take(str(wd), f"after step {step.id}",
                                   trailers=step_trailers(step.id, step.turn, "after"))
        changes = trees.changes(self.store.repo, step.before_tree, result.tree)
        step.changed = [os.fsdecode(c.path) for c in changes]
        step.created = [os.fsdecode(c.path) for c in changes if c.old is None]
        step.deleted = [os.fsdecode(c.path) for c in changes if c.new is None]
        step.after_tree, step.after_commit = result.tree, result.commit
        log.append({"event": "end", "step": step.id, "time": time.time(), "tree": result.tree,
                    "commit": result.commit, "changed": step.changed, "created": step.created,
                    "deleted": step.deleted})
        return result.taken

    def _target(self, first: Step, first_change: dict[bytes, Step]) -> st.Checkpoint:
        """Each path as before the first chosen step that changed it (see module doc)."""
        repo = self.store.repo
        needed = {s.id: s for s in first_change.values()}
        needed[first.id] = first
        for step in needed.values():
            at = [step.before_tree, *([step.before_commit] if step.before_commit else [])]
            if any(oid not in repo for oid in at):
                raise NotFound(f"step {step.id} is too old to revert: git gc has removed "
                               "its checkpoint")
        overrides = {}
        for path, step in first_change.items():
            if step is first:
                continue
            wanted = trees.lookup(repo, step.before_tree, path)
            if wanted != trees.lookup(repo, first.before_tree, path):
                overrides[path] = wanted
        if not overrides and first.before_commit:
            return load(repo, first.before_commit)
        return compose.compose(repo, first.before_tree, overrides, f"before step {first.id}",
                       parent=first.before_commit)

    def _restore(self, wd: Path, target: st.Checkpoint, paths: list[bytes], kind: str,
                 removable_dirs: set[bytes] | None = None, *,
                 confirmed: restore_mod.plan.Plan | None = None
                 ) -> restore_mod.RestoreResult | None:
        scope = self._scope(wd, target, paths)
        if not scope:
            return None
        options = self._options()
        options.confirmed = confirmed
        return restore_mod.restore(self.store, wd, target, options, _scope=scope,
                                   _kind=kind, _removable_dirs=removable_dirs)

    def _scope(self, wd: Path, target: st.Checkpoint, paths: list[bytes]) -> list[bytes]:
        """`paths` less those in neither the target nor the working tree (nothing to do)."""
        repo, base = self.store.repo, os.fsencode(str(wd))
        return [p for p in paths if trees.lookup(repo, target.tree_id, p) is not None
                or trees.is_dir(repo, target.tree_id, p) or os.path.lexists(base + b"/" + p)]

    def _options(self) -> restore_mod.Options:
        return restore_mod.Options(safe=False, limits=self.manager.limits,
                                   extra_excludes=self.manager.extra_excludes)


def _first_changes(chosen: list[Step]) -> dict[bytes, Step]:
    """Each path the chosen steps changed, and the first of them that changed it."""
    first: dict[bytes, Step] = {}
    for step in chosen:
        for path in step.changed:
            first.setdefault(os.fsencode(path), step)
    return first


def _as_previewed(preview: RevertPreview, chosen: list[Step]) -> None:
    """Refuse a revert of other steps than its preview showed (the agent went on since)."""
    ids = [s.id for s in chosen]
    if ids != preview.steps:
        since = [i for i in ids if i not in preview.steps] or ids
        raise Refused(f"revert would now take back other steps than it showed (e.g. step "
                      f"{since[0]!r}, begun since); nothing was reverted: ask again to see "
                      "the new plan")


def _project(working_dir: str) -> tuple[Path, str]:
    wd = st.normalize_workdir(working_dir)
    if not wd.is_dir():
        raise NotFound(f"working directory not found: {wd}")
    return wd, st.project_hash(wd)


def _unique(items) -> list[str]:
    return list(dict.fromkeys(items))


def _public(step: Step, *keys: str) -> dict[str, Any]:
    data = step.to_dict()
    return {k: data[k] for k in keys}


def _touched(result: restore_mod.RestoreResult | None) -> tuple[list[str], list[str]]:
    if result is None or result.outcome is None:
        return [], []
    out = result.outcome
    return ([os.fsdecode(p) for p in (*out.written, *out.deleted)],
            [os.fsdecode(d) for d in out.created_dirs])


def _outcome(result: restore_mod.RestoreResult | None) -> dict[str, Any]:
    """The restore part of a revert or redo result (Hermes-style keys)."""
    if result is None or result.outcome is None:
        return {"success": True, "restored_files": [], "deleted_files": [], "failed": [],
                "pre_rollback": None}
    out = result.outcome
    data: dict[str, Any] = {
        "success": result.success,
        "restored_files": [os.fsdecode(p) for p in out.written],
        "deleted_files": [os.fsdecode(p) for p in out.deleted],
        "failed": [{"path": os.fsdecode(p), "error": e} for p, e in out.failed],
        "pre_rollback": result.pre_rollback,
    }
    if not result.success:
        data["error"] = f"{result.failed_midway()}; `rewind undo` puts back the state before"
    return data
