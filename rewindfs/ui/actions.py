"""What `rewind ui`'s actions do, through the code the commands use (restore.restoring,
agent.steps, store labels): each first makes its plan as the dry run does, and carries it
out only once asked to; every restore takes its pre-rollback snapshot, as always. No
textual here: the app shows a Plan, asks y/n, and calls `run` on a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rewindfs import restore as rs
from rewindfs.errors import InvalidInput, NotFound, RewindError
from rewindfs.store.history import quote_path
from rewindfs.ui.text import clean

if TYPE_CHECKING:
    from rewindfs.store.history import Checkpoint
    from rewindfs.ui.source import Source


@dataclass
class Plan:
    """What an action will do, said before it does it."""

    title: str  # one line: what, to where
    lines: list[str]  # the dry run, as `rewind restore --dry-run` prints it
    run: Callable[[], list[str]]  # carries it out; what happened, as lines
    question: str = "go ahead?"
    nothing: bool = False  # nothing would change: no question to ask
    warnings: list[str] = field(default_factory=list)


def name_of(cp: Checkpoint) -> str:
    """The stable id first, then the number and reason people know (as `rewind restore`)."""
    number = f"checkpoint {cp.number}: " if cp.number else ""
    return f"{cp.short} ({number}{clean(cp.reason)})"


def restore_plan(source: Source, cp: Checkpoint, path: bytes | None, git: bool = False
                 ) -> Plan:
    """Restore `path` (None: the whole project) to `cp`: the plan, then the restore as it
    showed (a change it did not show, found since: refused, nothing restored). `git`: the
    project's .git too, as `cp` recorded it."""
    from rewindfs.cli.commands.restore import describe

    app, workdir = source.app, source.target.workdir
    if not workdir.is_dir():
        raise NotFound(f"{workdir} is not a directory here: `rewind restore --to DIR` "
                       "writes the checkpoint elsewhere")
    key = source.key if source.fetched else None
    if git and key:
        raise InvalidInput("a fetched project's checkpoints carry no repository state")

    def options() -> rs.Options:
        # A fetched checkpoint's time says nothing about the agent's writes here.
        return rs.Options(paths=[os.fsdecode(path)] if path is not None else None,
                          cwd=workdir, safe=False if key else None, limits=app.limits,
                          extra_excludes=app.extra_excludes, source=key, git=git,
                          git_bounds=app.settings.git_bounds() if git else None)

    with source.lock:
        planned = rs.dry_run(app.store, workdir, cp, options())
    what = quote_path(path) if path is not None else str(workdir) + (" and .git" if git else "")

    def run() -> list[str]:
        chosen = options()
        chosen.confirmed = planned.plan
        with source.lock:
            done = rs.restore(app.store, workdir, cp, chosen)
        head = done.failed_midway("restore", name_of(cp)) if not done.success \
            else f"restored {what} to {name_of(cp)}"
        return [head, *describe(done)]

    return Plan(f"restore {what} to {name_of(cp)}", describe(planned), run,
                question=f"restore {what}?" if path is not None or git else
                "restore the whole project?", nothing=not planned.plan.actions and not git)


def undo_plan(source: Source) -> Plan:
    """Undo the last restore of the project (an undo is itself undone the same way): the
    one the plan named, as the plan showed, or refused (another one since)."""
    from rewindfs.cli.commands.restore import describe

    app, workdir = source.app, source.target.workdir
    with source.lock:
        planned = rs.undo(app.store, workdir, _plain(source), dry_run=True)

    def run() -> list[str]:
        with source.lock:
            done = rs.undo(app.store, workdir, _plain(source), confirmed=planned)
        head = done.failed_midway("undo") if not done.success \
            else f"undid the last restore of {workdir}: back to {done.target.short}"
        return [head, *describe(done)]

    return Plan(f"undo the last restore of {workdir} (back to {planned.target.short})",
                describe(planned), run, question="undo the last restore?",
                nothing=not planned.plan.actions)


def revert_plan(source: Source, cp: Checkpoint) -> Plan:
    """Revert the agent turn `cp` belongs to, and the later steps of its session (`rewind
    revert`): other sessions' work stays, a file they changed too is kept and named."""
    from rewindfs.agent.steps import kept_dict
    from rewindfs.cli.commands.restore import describe
    from rewindfs.cli.commands.steps import kept_why, session_name

    turn = cp.trailers.get("Rewind-Turn")
    if not turn:
        raise InvalidInput(f"checkpoint {cp.short} is of no agent turn (taken by "
                           "`rewind checkpoint` or Hermes): restore it with r instead")
    if source.fetched:
        raise InvalidInput("a fetched project's turns stay on the machine that took them")
    manager, workdir = source.app.manager, str(source.target.workdir)
    session = cp.trailers.get("Rewind-Session") or None
    with source.lock:
        preview = manager.steps.preview_revert(workdir, turn, session)
    turns = ", ".join(clean(t) for t in preview.turns)
    lines = describe(preview.plan) if preview.plan is not None else \
        ["  nothing to change: those steps changed no files that are still there"]
    who = session_name(*preview.who)
    for path, kept in sorted(preview.decision.kept.items()):
        lines.append(f"  kept: {quote_path(path)} ({kept_why(kept_dict(kept))})")

    def run() -> list[str]:
        from rewindfs.cli.commands.steps import outcome

        with source.lock:
            result = manager.revert_to(workdir, turn, session, confirmed=preview)
        if not result.get("success"):
            raise RewindError(result.get("error") or "could not revert")
        return outcome(result, "reverted", "u")

    return Plan(f"revert turn(s) {turns} ({len(preview.steps)} step(s)"
                + (f" of {who})" if who else ")"), lines, run,
                question=f"revert turn {clean(turn)}?", nothing=preview.plan is None
                or not preview.plan.plan.actions)


def label(source: Source, cp: Checkpoint, name: str) -> str:
    """Name `cp` (labels are unique per project, and never pruned)."""
    from rewindfs.store import set_label

    if source.fetched:
        raise InvalidInput("labels name checkpoints of this machine's projects")
    with source.lock:
        set_label(source.app.store, source.key, name.strip(), cp.id)
    return f"labelled {name_of(cp)} as {clean(name.strip())!r}"


def _plain(source: Source) -> rs.Options:
    return rs.Options(limits=source.app.limits, extra_excludes=source.app.extra_excludes)


