"""Agent steps and turns: record what each step changed, revert a session's steps, redo.

A harness brackets each model step with `begin_step` / `end_step` (the hooks bracket
each tool call with its before and after event). Both take a checkpoint of the project,
which writes nothing when the files are as the newest checkpoint has them, so a step that
changed nothing costs two captures and no commit. The step log (store.history.metadata.
steplog, read by agent.timeline) records the trees before and after, and the session.

`revert_to(step or turn)` takes back that step and the later steps of the same session:
each file they changed goes back to what it was before the first of them that changed
it; files they created are deleted, and every other file (one a person edited outside
any step, one another session changed) is left alone. A file another session changed too
(after it, or while the two sessions' calls overlapped: agent.attribution) keeps its bytes
and is named in the result. It is a scoped restore, so it takes a pre-rollback snapshot
and is journalled like any other (`rewind undo` works on it). `unrevert` (redo) puts the
reverted files back as they were just before the revert, except those changed since.
Reverts stack; a session's new step after a revert discards its reverted steps, as chat
agents discard the messages after the point they rewound to. A revert
(or redo) taken back by `rewind undo` counts as never made: its steps are there to
revert again.

Results name the session and the turns involved, so the harness can rewind the
conversation to match.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Protocol

from rewindfs import restore as restore_mod
from rewindfs import store as st
from rewindfs.agent import attribution
from rewindfs.agent.stepbegin import append_begin, session_trailers, step_trailers, valid_id
from rewindfs.agent.timeline import (  # noqa: F401 - the step API's names, re-exported
    DISCARDED,
    DONE,
    OPEN,
    REVERTED,
    Revert,
    Step,
    Timeline,
    describe_session,
    replay,
    replayed,
    timeline_of,
)
from rewindfs.errors import NotFound, Refused
from rewindfs.store.history import carrying, compose, load, steplog, trees
from rewindfs.store.objects import writers


class RevertPreview:
    """What a revert would do: its restore's plan (None: no file to put back), the steps
    and turns it takes back, the session, and the files it would keep."""

    def __init__(self, plan: restore_mod.RestoreResult | None, chosen: list[Step],
                 decision: attribution.Decision):
        self.plan, self.decision = plan, decision
        self.steps = [s.id for s in chosen]
        self.turns = _unique(s.turn for s in chosen)
        self.who = chosen[0].who


class Manager(Protocol):
    """What the steps use of the CheckpointManager that owns them."""

    limits: st.Limits
    extra_excludes: tuple[str, ...]
    max_snapshots: int

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

    def begin(self, working_dir: str, step_id: str, turn_id: str, session: str = ""
              ) -> dict[str, Any]:
        """`session`: the agent session the step is of (reverts are per session)."""
        wd, h16 = _project(working_dir)
        step_id, turn_id = valid_id(step_id, "step"), valid_id(turn_id, "turn")
        session = valid_id(session, "session") if session else ""
        # Under the log's lock: the marks are in the order of their captures.
        with steplog.session(self.store.layout, h16) as log:
            result = self.manager.take(str(wd), f"before step {step_id}",
                                       trailers={**session_trailers("", session),
                                                 **step_trailers(step_id, turn_id, "before")})
            discarded = [s.id for s in self._replay(log, h16).steps.values()
                         if s.status == REVERTED and s.who == ("", session)]
            append_begin(log, step_id, turn_id, result.tree, result.commit, session=session)
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
                taken = self._end(log, wd, step).taken
        return {"success": True, "taken": taken, "hash": step.after_commit,
                **_public(step, "step_id", "turn_id", "changed_files", "created_files",
                          "deleted_files")}

    def revert_to(self, working_dir: str, step_or_turn: str, session: str | None = None,
                  confirmed: RevertPreview | None = None) -> dict[str, Any]:
        """`session`: the session the step or turn is of, when two share its name.
        `confirmed`: its preview as a person saw it (`rewind ui`): the revert takes back
        those steps, as the preview showed, or is refused with nothing changed."""
        wd, h16 = _project(working_dir)
        with steplog.session(self.store.layout, h16) as log:
            target = self._replay(log, h16).find(step_or_turn, session)  # unknown: no change
            who, now = target.who, None
            for step in self._replay(log, h16).active():
                if step.status == OPEN and step.who == who:  # running: settle it so far
                    now = self._end(log, wd, step)
            if now is None:
                now = self.manager.take(str(wd), f"before revert of {step_or_turn}",
                                        trailers=session_trailers(*who))
            timeline = self._replay(log, h16)
            chosen = timeline.chosen(timeline.steps[target.id])
            if confirmed is not None:
                _as_previewed(confirmed, chosen)
            decision = attribution.decide(self.store.repo, timeline, chosen, now.tree)
            result = None
            if decision.back_to:
                # A composed target is on no ref: an explicit gc must wait until it is restored.
                with writers.writing(self.store.layout):
                    goal = self._target(chosen[0], decision)
                    shown = None if confirmed is None else \
                        confirmed.plan.plan if confirmed.plan else restore_mod.plan.Plan()
                    result = self._restore(wd, goal, sorted(decision.back_to), "revert",
                                           confirmed=shown)
            turns = _unique(s.turn for s in chosen)
            touched, created_dirs = _touched(result)
            after = self._settle(wd, now.tree, touched, f"after revert of turn(s) "
                                 f"{', '.join(turns)}", who)
            chosen_ids = {s.id for s in chosen}
            kept_before = [s for s in timeline.active() if s.id not in chosen_ids
                           and s.turn == chosen[0].turn and s.who == who]
            kept = [os.fsdecode(p) for p in sorted(decision.kept)]
            log.append({"event": "revert", "time": time.time(), "target": chosen[0].id,
                        "steps": [s.id for s in chosen], "turns": turns,
                        **_logged(who), "pre_rollback": result.pre_rollback if result else None,
                        "touched": touched, "created_dirs": created_dirs, "kept": kept,
                        "before_tree": now.tree, "after_tree": after})
        return {**_outcome(result), **_names(who), "target_step": chosen[0].id,
                "target_turn": chosen[0].turn, "reverted_steps": [s.id for s in chosen],
                "turns": turns, "partial_turn": chosen[0].turn if kept_before else None,
                "kept": [kept_dict(k) for _, k in sorted(decision.kept.items())]}

    def preview_revert(self, working_dir: str, step_or_turn: str,
                       session: str | None = None) -> RevertPreview:
        """What `revert_to` would do, with nothing in the project changed (`rewind ui`
        shows it before asking): a step still running is measured against the working
        tree as it is now (`revert_to` settles it with a checkpoint first)."""
        wd, h16 = _project(working_dir)
        timeline = timeline_of(self.store.layout, h16)
        chosen = timeline.chosen(timeline.find(step_or_turn, session))
        now = st.working_tree_tree(self.store, wd, self.manager.limits,
                                   self.manager.extra_excludes)
        decision = attribution.decide(self.store.repo, timeline, chosen, now)
        plan = None
        if decision.back_to:
            with writers.writing(self.store.layout):
                goal = self._target(chosen[0], decision)
                scope = self._scope(wd, goal, sorted(decision.back_to))
                if scope:
                    plan = restore_mod.dry_run(self.store, wd, goal, self._options(),
                                               _scope=scope)
        return RevertPreview(plan, chosen, decision)

    def unrevert(self, working_dir: str) -> dict[str, Any]:
        wd, h16 = _project(working_dir)
        with steplog.session(self.store.layout, h16) as log:
            timeline = self._replay(log, h16)
            if not timeline.reverts:
                raise NotFound("nothing to redo: no revert since the last step began")
            last = timeline.reverts[-1]
            now = self.manager.take(str(wd), f"before redo of turn(s) {', '.join(last.turns)}",
                                    trailers=session_trailers(*last.who))
            repo, result, changed = self.store.repo, None, []
            if last.pre_rollback and last.touched:
                paths = [os.fsencode(p) for p in last.touched]
                if last.after_tree is not None and last.after_tree in repo:
                    # A file changed since the revert (by another session, a person) stays.
                    changed = [p for p in paths if trees.lookup(repo, now.tree, p)
                               != trees.lookup(repo, last.after_tree, p)]
                before = load(repo, last.pre_rollback)
                result = self._restore(wd, before, [p for p in paths if p not in changed],
                                       "unrevert", {os.fsencode(d) for d in last.created_dirs})
            touched, _ = _touched(result)
            after = self._settle(wd, now.tree, touched,
                                 f"after redo of turn(s) {', '.join(last.turns)}", last.who)
            log.append({"event": "unrevert", "time": time.time(), "steps": last.steps,
                        "turns": last.turns, **_logged(last.who),
                        "pre_rollback": result.pre_rollback if result else None,
                        "kept": [os.fsdecode(p) for p in changed],
                        "before_tree": now.tree, "after_tree": after})
        return {**_outcome(result), **_names(last.who), "restored_steps": last.steps,
                "turns": last.turns, "kept": [{"path": os.fsdecode(p), "when": "since",
                                               "sessions": []} for p in changed]}

    def steps(self, working_dir: str) -> list[dict[str, Any]]:
        _, h16 = _project(working_dir)
        return [s.to_dict() for s in timeline_of(self.store.layout, h16).steps.values()]

    # -- helpers --------------------------------------------------------------------

    def _replay(self, log: steplog.StepLog, h16: str) -> Timeline:
        return replayed(self.store.layout, h16, log.events())

    def _end(self, log: steplog.StepLog, wd: Path, step: Step) -> st.SnapshotResult:
        result = self.manager.take(str(wd), f"after step {step.id}",
                                   trailers={**session_trailers(*step.who),
                                             **step_trailers(step.id, step.turn, "after")})
        changes = trees.changes(self.store.repo, step.before_tree, result.tree)
        step.changed = [os.fsdecode(c.path) for c in changes]
        step.created = [os.fsdecode(c.path) for c in changes if c.old is None]
        step.deleted = [os.fsdecode(c.path) for c in changes if c.new is None]
        step.after_tree, step.after_commit = result.tree, result.commit
        log.append({"event": "end", "step": step.id, "time": time.time(), "tree": result.tree,
                    "commit": result.commit, "changed": step.changed, "created": step.created,
                    "deleted": step.deleted})
        return result

    def _settle(self, wd: Path, before: str, touched: list[str], reason: str,
                who: tuple[str, str]) -> str:
        """The files once a revert or redo changed `touched` (the rest as `before`, the
        capture just taken): a checkpoint of those paths alone."""
        if not touched:
            return before
        result = carrying.take_carrying(
            self.store, str(wd), reason, trailers=session_trailers(*who),
            limits=self.manager.limits, extra_excludes=self.manager.extra_excludes,
            keep=self.manager.max_snapshots, paths=[os.fsencode(p) for p in touched])
        return result.tree or before

    def _target(self, first: Step, decision: attribution.Decision) -> st.Checkpoint:
        """Each path as the decision wants it, the rest as before the first step."""
        repo = self.store.repo
        overrides = {}
        for path in decision.back_to:
            wanted = decision.entry(repo, path)
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


def _names(who: tuple[str, str]) -> dict[str, str | None]:
    return {"agent": who[0] or None, "session": who[1] or None}


def _logged(who: tuple[str, str]) -> dict[str, str]:
    return {k: v for k, v in zip(("agent", "session"), who, strict=True) if v}


def kept_dict(kept: attribution.Kept) -> dict[str, Any]:
    return {"path": os.fsdecode(kept.path), "when": kept.when,
            "sessions": [_names(w) for w in kept.sessions]}


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
