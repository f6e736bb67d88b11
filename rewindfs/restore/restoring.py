"""A restore carried out (the order is the package's, rewindfs.restore): the pre-rollback
snapshot, the plan, the journal's intent, the apply, its completion; and undo, dry runs,
exports."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewindfs import store as st
from rewindfs.errors import InvalidInput, NotFound, Refused, StoreError
from rewindfs.restore import confirm, gitrestore, journal
from rewindfs.restore.apply import Outcome, apply, survey, tidy
from rewindfs.restore.paths import project_relative
from rewindfs.restore.plan import Plan, build
from rewindfs.store.capture import DEFAULT_LIMITS, Limits, capture
from rewindfs.store.history import bounds, ledger, load, locked, modes, take_locked, tip, trees


@dataclass
class RestoreResult:
    directory: Path
    target: st.Checkpoint
    plan: Plan
    pre_rollback: str | None = None
    outcome: Outcome | None = None  # None for a dry run
    safe: bool = False
    kept_oversize: list[bytes] = field(default_factory=list)  # over the cap, not in target
    undone: journal.Entry | None = None  # an undo (or its plan): the restore it takes back
    git: Any = None  # --git: what became of .git (restore.gitrestore.GitOutcome)
    git_hint: str | None = None  # a plain restore: how .git differs from the target's

    @property
    def success(self) -> bool:
        return self.outcome is not None and not self.outcome.failed \
            and not self.outcome.not_attempted

    def failed_midway(self, kind: str = "restore", target: str | None = None) -> str:
        """The first thing to say about a restore that failed after it began changing
        files: that it failed, and that the tree is now partly restored. `target`: how to
        name the checkpoint (default: its short id)."""
        outcome = self.outcome or Outcome()
        undone = len(outcome.failed) + len(outcome.not_attempted)
        return (f"{kind} failed midway: {self.directory} is partly restored to "
                f"{target or self.target.short}; {undone} file(s) not restored")


@dataclass
class Options:
    paths: list[str] | None = None  # None or [] = the whole project
    cwd: Path | None = None  # CLI: paths relative to here; API: None (relative to project)
    safe: bool | None = None  # None: safe when the agent-write ledger has entries since target
    # The plan a person confirmed (a dry run's): the restore changes no path in a way it
    # did not show (a file deleted, written or created that it did not list: refused,
    # nothing changed). None: the restore carries out the plan it makes.
    confirmed: Plan | None = None
    delete_missing: bool = True  # a named path absent from the checkpoint may be deleted
    limits: Limits = DEFAULT_LIMITS
    extra_excludes: tuple[str, ...] = ()
    # Where the target's notes (its recorded modes) are: a fetched project's key when the
    # target came from a remote (store.remote); None: this project.
    source: str | None = None
    git: bool = False  # the project's .git too, as the target recorded it (gitrestore)
    git_bounds: Any = None  # what of .git is saved first at most (projectgit.Bounds)


def restore(store: st.Store, workdir, reference: str | st.Checkpoint,
            options: Options | None = None, *, _scope: list[bytes] | None = None,
            _kind: str = "restore", _removable_dirs: set[bytes] | None = None,
            _expect: dict[bytes, str | None] | None = None,
            _undoes: str | None = None, _newest: str | None = None) -> RestoreResult:
    """Restore `workdir` (or the given paths) to checkpoint `reference`.

    `reference` may be a Checkpoint already loaded (agent step reverts use ones
    that are no longer listed, or composed ones; see store.history.compose).
    `_newest` (an undo of the last restore): that journal entry must still be the last
    one that changed files once the project is held, else Refused, nothing done.
    """
    opts = options or Options()
    wd = _existing_workdir(workdir)
    repo, h16 = history_of(store, wd)
    target = reference if isinstance(reference, st.Checkpoint) else st.resolve(repo, h16, reference)
    scope = _scope if _scope is not None else _scope_of(opts, wd)
    safe = _safe(store, h16, target, opts, scope)
    check_tree(repo, target, opts.source)  # before anything, the pre-rollback snapshot too
    state = _git_state(target, wd, opts)
    root = os.fsencode(str(wd))
    with locked(store, wd) as project:
        jpath = journal.path_for(store.layout, h16)
        confirm.still_newest(jpath, _newest, wd)
        _tidy(jpath, root)
        seen = _capture_current(project, target, scope, opts)
        # Commits the index just captured (no path is captured afresh). A project
        # without a checkpoint yet gets one even when its tree is empty: an undo of
        # this restore then removes what it created.
        pre = take_locked(
            project, f"pre-rollback snapshot (restoring to {target.short})",
            limits=opts.limits, extra_excludes=opts.extra_excludes,
            trailers={"Rewind-Restore-Target": target.id}, paths=[],
            allow_empty=tip(project) is None, recorder=_recorder(opts) if state else None,
        )
        if pre.commit is None:
            raise StoreError(f"no pre-rollback snapshot of {wd} could be recorded, so the "
                             "restore could not be undone; nothing was changed")
        # Nothing is recorded in the journal of a restore refused or failing here:
        # nothing changed, and `rewind undo` still takes back the restore before it.
        plan = _plan(store, h16, wd, pre.tree, target, scope, safe, opts.delete_missing,
                     expect=_expect, lenient=_kind == "undo")
        confirm.as_shown(plan, opts.confirmed, _kind)
        recorded, may_create = survey(root, plan)
        # The pre-rollback commit and its modes note are on disk (libgit2 fsyncs them,
        # store.objects.durable) before the journal names them.
        modes.record(repo, h16, pre.commit, recorded)
        entry = journal.begin(
            jpath, kind=_kind, target=target.id, pre_rollback=pre.commit,
            plan=[(a.path, a.entry.oid if a.entry else None) for a in plan.actions],
            dirs=may_create, undoes=_undoes, git=bool(state))
        outcome, given = Outcome(), None
        try:
            apply(plan, root, lambda oid: trees.blob_source(repo, oid), _removable_dirs,
                  modes=modes.read(repo, opts.source or h16, target.id), outcome=outcome)
            given = gitrestore.give_back(store, wd, state) if state else None
        except BaseException as exc:
            # How far it got, so undo is exact: Ctrl-C (or a signal) interrupted it, or
            # it failed (an error it could not go on from, reported to the caller).
            status = journal.INTERRUPTED if isinstance(exc, KeyboardInterrupt | SystemExit) \
                else journal.FAILED
            journal.end(jpath, entry, status, outcome.touched, outcome.created_dirs)
            raise
        _recap(project, seen, opts)
        status = journal.DONE if not (outcome.failed or outcome.not_attempted) \
            else journal.FAILED
        journal.end(jpath, entry, status, outcome.touched, outcome.created_dirs)
    return RestoreResult(wd, target, plan, pre.commit, outcome, safe, seen.kept_oversize,
                         git=given,
                         git_hint=_hint(repo, target, wd, opts) if given is None else None)


def dry_run(store: st.Store, workdir, reference: str | st.Checkpoint,
            options: Options | None = None, *, _scope: list[bytes] | None = None,
            _expect: dict[bytes, str | None] | None = None) -> RestoreResult:
    """The plan a restore would carry out; nothing in the project changes.

    The working tree is captured exactly as `restore` captures it (only the named
    paths, when there are some), so the plan is the one the restore will make.
    `_scope`/`_expect` as for `restore` (an undo's dry run).
    """
    opts = options or Options()
    wd = _existing_workdir(workdir)
    repo, h16 = history_of(store, wd)
    target = reference if isinstance(reference, st.Checkpoint) else st.resolve(repo, h16, reference)
    check_tree(repo, target, opts.source)
    scope = _scope if _scope is not None else _scope_of(opts, wd)
    safe = _safe(store, h16, target, opts, scope)
    with locked(store, wd) as project:
        seen = _capture_current(project, target, scope, opts)
        _recap(project, seen, opts)
    plan = _plan(store, h16, wd, seen.tree, target, scope, safe, opts.delete_missing,
                 expect=_expect, lenient=_scope is not None)
    return RestoreResult(wd, target, plan, safe=safe, kept_oversize=seen.kept_oversize,
                         git_hint=_hint(repo, target, wd, opts))


_plan_only = dry_run  # undo() has a parameter of that name


def undo(store: st.Store, workdir, options: Options | None = None, *,
         entry: journal.Entry | None = None, dry_run: bool = False,
         confirmed: RestoreResult | None = None) -> RestoreResult:
    """Put back what the last restore (or undo) that changed files changed, as it was
    just before it: restores that changed nothing are walked past.

    With `entry` (one of journal.undoable), that restore instead: `rewind undo
    --steps N` undoes several, newest first. `dry_run`: the plan only (its `undone`
    says which restore it takes back). `confirmed`: that plan, as a person saw it
    (`rewind ui`): the same restore is taken back, only while it is still the last one
    that changed files, and only as the plan showed (else Refused, nothing changed).

    A restore that died midway (killed: no completion record; or interrupted, when
    the file being renamed at that moment may be missing from its record) is undone
    from its intent record: each path it planned is put back as the pre-rollback snapshot
    holds it if it is as the restore left it, or still as it was; a path changed since
    in some other way (a person's edit after the crash) is kept and reported.
    """
    wd = _existing_workdir(workdir)
    h16 = st.project_hash(wd)
    jpath = journal.path_for(store.layout, h16)
    if confirmed is not None:
        entry = confirmed.undone
    last = entry or journal.last_change(jpath)
    if last is None:
        said = "no restore recorded" if journal.last(jpath) is None \
            else "no restore recorded changed any file"
        raise NotFound(f"nothing to undo: {said} for {wd}")
    opts = options or Options()
    opts.safe, opts.git = False, last.git  # a restore of .git too: its undo moves it back
    if confirmed is not None:
        opts.confirmed = confirmed.plan
    if last.complete:
        scope, removable, expect = last.touched_paths(), last.created_dir_paths(), None
    else:
        scope, removable, expect = last.planned_paths(), last.dir_paths(), last.expected()
    if not scope and not last.git:  # (an entry given that changed nothing)
        raise NotFound("nothing to undo: that restore changed no files")
    if dry_run:
        before = load(store.repo, last.pre_rollback)
        result = _plan_only(store, wd, before, opts, _scope=scope, _expect=expect)
        result.undone = last
        return result
    # Taking back "the last restore": it must still be the last once the project is held.
    newest = last.id if entry is None or confirmed is not None else None
    result = restore(store, wd, last.pre_rollback, opts, _scope=scope, _kind="undo",
                     _removable_dirs=removable, _expect=expect, _undoes=last.id,
                     _newest=newest)
    result.undone = last
    return result


# -- helpers ------------------------------------------------------------------------


@dataclass
class _Current:
    tree: str  # the working tree as the restore starts from it
    grown: list[bytes]  # over the size cap, held by the target: captured regardless
    kept_oversize: list[bytes]  # over the size cap, not in the target: left as they are


def _capture_current(project: st.Project, target: st.Checkpoint, scope: list[bytes] | None,
                     opts: Options) -> _Current:
    """Capture what the restore starts from into the project's index.

    A file the size cap leaves out is not the restore's to touch, unless the
    target holds it (it was small then): that one is reverted, so it is captured
    too, without the cap, and the pre-rollback snapshot can give it back.
    """
    project.store.refresh_excludes(project, opts.extra_excludes)
    first = capture(project, opts.limits, scope)
    repo = project.repo
    oversize = [os.fsencode(p) for p in first.oversize]
    grown = [p for p in oversize if trees.lookup(repo, target.tree_id, p) is not None]
    tree = str(first.tree_id)
    if grown:
        uncapped = Limits(max_file_size=0, max_files=opts.limits.max_files)
        tree = str(capture(project, uncapped, grown).tree_id)
    return _Current(tree, grown, [p for p in oversize if p not in grown])


def _recap(project: st.Project, seen: _Current, opts: Options) -> None:
    """Capture the grown files again under the cap, so that the next checkpoint holds a
    file the restore left over the cap (or a dry run looked at) no more than before."""
    if seen.grown:
        capture(project, opts.limits, seen.grown)


def _git_state(target: st.Checkpoint, wd: Path, opts: Options) -> str | None:
    """With --git: the state the target recorded, and a `.git` fit to take it (Refused
    first, when not: nothing changes)."""
    if not opts.git:
        return None
    state = gitrestore.state_of(target)
    gitrestore.check(wd)
    return state


def _recorder(opts: Options):
    """.git as it is, saved with the pre-rollback snapshot (nothing changes otherwise)."""
    from rewindfs.store.projectgit import Bounds, Recorder  # (--git only: it copies)

    return Recorder(opts.git_bounds or Bounds(), required=True)


def _hint(repo, target: st.Checkpoint, wd: Path, opts: Options) -> str | None:
    """A whole-project restore without --git: one line when .git is missing or its refs
    differ from the target's (naming --git). With --git: what .git becomes."""
    from rewindfs.store.projectgit import summary

    if opts.git:
        said = summary.describe(repo, target.trailers)
        return f"--git: .git as {target.short} recorded it: " + "; ".join(
            line.strip() for line in summary.lines(said)) if said else None
    if opts.paths or opts.source:
        return None
    return summary.difference(repo, target.trailers, wd,
                              str(target.number) if target.number else target.short)


def _existing_workdir(workdir) -> Path:
    wd = st.normalize_workdir(workdir)
    if not wd.is_dir():
        raise NotFound(f"working directory {wd} does not exist "
                       "(use --to DIR to write the checkpoint somewhere else)")
    return wd


def history_of(store: st.Store, wd: Path):
    if not store.exists():
        raise NotFound(f"no checkpoints for {wd}")
    return store.repo, st.project_hash(wd)


def _scope_of(opts: Options, wd: Path) -> list[bytes] | None:
    if not opts.paths:
        return None
    scope = [project_relative(p, wd, cwd=opts.cwd) for p in opts.paths]
    return None if b"" in scope else scope


def _safe(store: st.Store, h16: str, target: st.Checkpoint, opts: Options,
          scope: list[bytes] | None) -> bool:
    if opts.safe is not None:
        return opts.safe
    return scope is None and bool(ledger.writes_since(store.layout, h16, target.precise_time))


def _plan(store: st.Store, h16: str, wd: Path, current_tree: str | None, target: st.Checkpoint,
          scope: list[bytes] | None, safe: bool, delete_missing: bool = True, *,
          expect: dict[bytes, str | None] | None = None, lenient: bool = False) -> Plan:
    """`expect` (undoing a restore that died midway): revert a path only when it holds
    what the restore was writing there. `lenient` (an undo): a scope path in neither
    the target nor the working tree is already as wanted (reported as gone)."""
    repo = store.repo
    current = current_tree or str(repo.TreeBuilder().write())
    gone = []
    for path in scope or ():
        if trees.lookup(repo, target.tree_id, path) or trees.is_dir(repo, target.tree_id, path):
            continue
        name = os.fsdecode(path)
        if not os.path.lexists(os.fsencode(str(wd)) + b"/" + path):
            if lenient:
                if expect is None:  # (a restore that died may simply not have got to it)
                    gone.append(path)
                continue
            raise NotFound(f"{name!r} is in neither checkpoint {target.short} "
                           "nor the working tree")
        if not delete_missing:
            raise InvalidInput(f"{name!r} did not exist in checkpoint {target.short}; "
                               "restoring it would delete it (confirm to remove it)")
    writes = ledger.writes_since(store.layout, h16, target.precise_time) if safe else expect
    plan = build(trees.changes(repo, current, target.tree_id), os.fsencode(str(wd)), scope,
                 writes)
    plan.gone = gone
    return plan


def check_tree(repo, target: st.Checkpoint, source: str | None = None) -> None:
    """Refuse a target whose tree names a path that must never be written (`..`, `.git`),
    or, from a fetched project (`source`), one over the bounds a tree from outside must
    keep (store.history.bounds: files, depth, sizes), measured before it is walked."""
    if source is not None:
        bounds.check(repo, target.tree_id, f"checkpoint {target.short} of a fetched project",
                     "restored")
    bad = trees.unsafe_entry(repo, target.tree_id)
    if bad is not None:
        path, why = bad
        name = os.fsdecode(path if len(path) <= 120 else path[:60] + b"..." + path[-40:])
        raise Refused(f"checkpoint {target.short} is unsafe to restore: entry "
                      f"{name!r} is {why}; nothing was changed")


def _tidy(jpath: Path, root: bytes) -> None:
    """Remove temporary files left by restores that died midway, in the directories
    their journal entries name."""
    for entry in journal.untidied(jpath):
        dirs = {p.rpartition(b"/")[0] for p in entry.planned_paths()} | entry.dir_paths()
        tidy(root, dirs)
        journal.mark_tidied(jpath, entry)


__all__ = ["Options", "RestoreResult", "dry_run", "project_relative", "restore", "undo"]
