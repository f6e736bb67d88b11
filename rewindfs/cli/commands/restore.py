"""`rewind restore` (and the report of a restore or an undo: `report`, `describe`)."""

from __future__ import annotations

import json
import os
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from rewindfs import restore as rs
from rewindfs import store as st
from rewindfs.agent.results import names, restore_dict
from rewindfs.agent.state import restore_report
from rewindfs.cli.app import App, cli_relative, path_base
from rewindfs.cli.commands.complete import complete_reference
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option, json_option, refuse_together
from rewindfs.cli.output import leftout as left_out
from rewindfs.cli.output.feedback import restore_progress
from rewindfs.cli.output.human import visible
from rewindfs.cli.output.plain import styled
from rewindfs.cli.output.term import confirm
from rewindfs.cli.target import remote_option
from rewindfs.cli.target import resolve as resolve_target
from rewindfs.errors import InvalidInput, NotFound, Refused
from rewindfs.sources.stepref import is_step
from rewindfs.store import Checkpoint, project_hash
from rewindfs.store.history import quote_path

SHOW = 20  # paths listed per group before "... and N more"
SAFE_WHY = ("safe mode: the agent recorded its writes since this checkpoint, so only files "
            "still as the agent left them are restored and your own edits are kept "
            "(--all restores everything)")


@click.command(epilog=examples(
    "rewind restore 3                  # the whole project back to checkpoint 3",
    "rewind restore 3 src/app.py       # one file (or directory)",
    "rewind restore before-refactor    # by label; or by id: rewind restore 1a2b3c4d",
    "rewind restore '1 hour ago'       # the newest checkpoint at least an hour old",
    "rewind restore 3 --dry-run        # what it would change; nothing is touched",
    "rewind restore 3 --to /tmp/old    # write the checkpoint into a new directory",
    "rewind restore 1 --git            # the files and .git: commits, branches, stash, index",
    "rewind restore 1 --remote origin  # this path as another machine pushed it",
    "rewind restore 1 -C @origin/app --to /tmp/app   # a fetched project, elsewhere",
    "rewind restore kilo:2             # as Kilo Code's step found it (`rewind list --agent kilo`)",
    "rewind restore kilo:2 --revert    # only what that step and the later ones changed",
))
@click.argument("reference", shell_complete=complete_reference)
@click.argument("paths", nargs=-1, type=click.Path())
@dir_option
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Delete files without asking.")
@click.option("--all", "restore_all", is_flag=True,
              help="Restore every file, also ones a person edited since the agent wrote them.")
@click.option("--safe", is_flag=True, help="Only revert files still as the agent wrote them.")
@click.option("--to", "dest", type=click.Path(),
              help="Write the checkpoint (or PATHS) into this new directory instead.")
@click.option("--git", "git", is_flag=True,
              help="Also give the project's .git back as the checkpoint recorded it: "
                   "recreated when gone, else its refs, HEAD, index and stash set back.")
@remote_option
@click.option("--revert", is_flag=True,
              help="With a kilo:/opencode: step: as the agent's \"revert to here\", put back "
                   "only the files that step and the later steps of its session changed.")
@json_option
@click.pass_obj
def restore(app: App, reference: str, paths: tuple[str, ...], directory: str | None,
            dry_run: bool, yes: bool, restore_all: bool, safe: bool, dest: str | None,
            git: bool, remote: str | None, revert: bool, as_json: bool) -> None:
    """Restore the project, or PATHS, to checkpoint REFERENCE (pre-rollback snapshot first).

    REFERENCE is a number from `rewind list`, an id, a label or a time. The
    restore saves the current state first (a pre-rollback snapshot, listed
    without a number), so `rewind undo` takes it back; numbers do not shift.
    A restore never touches .git unless --git is given; then the repository is
    saved first too, and `rewind undo` moves its refs back.
    """
    refuse_together(**{"--safe": safe, "--all": restore_all})
    refuse_together(**{"--to": dest, "--safe": safe})
    refuse_together(**{"--to": dest, "--all": restore_all})
    refuse_together(**{"--revert": revert, "PATHS": paths})
    refuse_together(**{"--revert": revert, "--to": dest})
    for other, given in (("PATHS", paths), ("--to", dest), ("--remote", remote),
                         ("--revert", revert)):
        refuse_together(**{"--git": git, other: given})
    place = resolve_target(app, directory, remote, reference)
    if place.by_id and not dest:
        raise InvalidInput(f"checkpoint {reference} is of {place.title}, not of the project "
                           f"here: restore it there with -C, or anywhere with --to DIR")
    workdir = place.workdir
    source = place.key if place.fetched else None
    with ExitStack() as held:
        target: str | Checkpoint = reference
        scope, kept = None, {}
        if is_step(reference):
            refuse_together(**{"a kilo:/opencode: step": True, "--remote": remote})
            from rewindfs.cli.commands import agents  # (their readers: only for their steps)

            target, scope, kept = held.enter_context(
                agents.restore_target(app, workdir, reference, revert))
        elif revert:
            raise click.UsageError("--revert is for kilo:/opencode: steps "
                                   "(`rewind revert` reverts our own agent steps)")
        elif source:  # resolved among the fetched project's checkpoints, not this project's
            target = st.resolve(app.store.repo, source, reference)
        if dest:
            _export(app, workdir, target, dest, paths, dry_run, source, as_json)
            return
        if source:
            _local_project(app, place, remote)
        _restore(app, workdir, target, scope, source, paths, dry_run, yes, restore_all, safe,
                 as_json, git, kept)


def _local_project(app: App, place, remote: str | None) -> None:
    """A fetched checkpoint is restored in place only into the local project of the very
    path its record names: the one `--remote` was run in, or (`-C @NAME/PROJECT`) one
    this store already knows. A record says where its checkpoints came from, never
    where they may go."""
    found = place.fetched
    if found.workdir is None:
        raise Refused(f"{place.spec} names no absolute path to restore into (its record "
                      "is not usable): restore it into a new directory with --to DIR")
    workdir = place.workdir
    if not workdir.is_dir():
        raise NotFound(f"{workdir} is not a directory here: restore {place.title} into "
                       "a new directory with --to DIR")
    if remote is None and not _known_project(app, workdir):
        raise Refused(f"{workdir} is no project of this store: restore {place.title} into a "
                      f"new directory with --to DIR, or run `rewind restore REF --remote "
                      f"{found.remote}` in that project")


def _known_project(app: App, workdir: Path) -> bool:
    from rewindfs.store.history import projects

    found = projects.read_record(app.store.layout, project_hash(workdir))
    return found is not None and found.workdir == workdir


def _export(app: App, workdir: Path, target: str | Checkpoint, dest: str,
            paths: tuple[str, ...], dry_run: bool, source: str | None, as_json: bool) -> None:
    result = rs.export(app.store, workdir, target, dest, _project_paths(paths, workdir),
                       dry_run=dry_run, source=source)
    report(app, result, None, as_json,
            f"plan for writing {_target(result)} to {dest}; nothing was written"
            if dry_run else f"wrote {_target(result)} to {dest}")


def _restore(app: App, workdir: Path, target: str | Checkpoint, scope: list[bytes] | None,
             source: str | None, paths: tuple[str, ...], dry_run: bool, yes: bool,
             restore_all: bool, safe: bool, as_json: bool, git: bool = False,
             kept: dict[bytes, list[tuple[str, str]]] | None = None) -> None:
    """`scope`: project paths a step revert is limited to (else PATHS, else everything),
    `kept` the files it leaves (another session changed them too); `source`: the fetched
    project `target` is a checkpoint of; `git`: .git too."""
    options = rs.Options(
        paths=list(paths) or None, cwd=path_base(workdir),
        # A fetched checkpoint's time says nothing about the agent's writes here.
        safe=False if restore_all or (source and not safe) else (True if safe else None),
        limits=app.limits, extra_excludes=app.extra_excludes, source=source,
        git=git, git_bounds=app.settings.git_bounds() if git else None,
    )
    kept_rows = [{"path": os.fsdecode(p), "when": "later", "sessions": [
        {"agent": a, "session": s} for a, s in who]} for p, who in sorted((kept or {}).items())]
    if scope is not None and not scope and not git:
        if as_json:
            click.echo(json.dumps({"success": True, "restored_files": [], "deleted_files": [],
                                   "kept": kept_rows}, indent=2))
            return
        click.echo("nothing to revert: that step and the ones after it changed no files"
                   + (" that another session did not change too" if kept_rows else ""))
        _say_kept(kept_rows)
        return
    plan_result = rs.dry_run(app.store, workdir, target, options, _scope=scope)
    if plan_result.safe and options.safe is None:
        app.term.note("safe restore (the agent recorded writes since this checkpoint): files "
                      "a person changed are kept; --all restores them too")
    extra = {"kept": kept_rows} if kept_rows else {}
    if dry_run:
        report(app, plan_result, None, as_json, f"plan for restoring to {_target(plan_result)}; "
                "nothing was changed", extra)
        _say_kept(kept_rows, as_json)
        return
    if plan_result.plan.deletes and not yes:
        _confirm(app, plan_result)
    if not yes:  # (-y: delete without asking, whatever the restore finds to delete)
        options.confirmed = plan_result.plan  # carried out as planned (and shown), or refused
    with restore_progress(app.term):  # to the checkpoint planned, whatever REFERENCE names now
        result = rs.restore(app.store, workdir, plan_result.target, options, _scope=scope)
    report(app, result, paths, as_json, f"restored {workdir} to {_target(result)}",
            {**restore_report(app.store, result, source), **extra})
    _say_kept(kept_rows, as_json)


def _say_kept(rows: list[dict], as_json: bool = False) -> None:
    """The files a step revert left as they are, and why (another session's changes)."""
    if not rows or as_json:
        return
    from rewindfs.cli.commands.steps import kept_why

    for row in rows:
        click.echo(f"  kept: {quote_path(row['path'])} ({kept_why(row)})")


def _target(result: rs.RestoreResult) -> str:
    """The stable id first (it never changes), then the number and reason people know
    (the reason written out, never obeyed: cli.output.human.visible)."""
    target = result.target
    number = f"checkpoint {target.number}: " if target.number else ""
    return visible(f"{target.short} ({number}{target.reason})")


def _project_paths(paths: tuple[str, ...], workdir: Path) -> list[str] | None:
    if not paths:
        return None
    return [os.fsdecode(cli_relative(workdir, p)) for p in paths]


def _confirm(app: App, plan_result: rs.RestoreResult) -> None:
    """Ask before deleting: show everything the restore will do, then the question."""
    deletes = plan_result.plan.deletes
    if not sys.stdin.isatty():
        raise Refused(f"restore would delete {len(deletes)} file(s) ({_listing(deletes)}); "
                      "rerun with --yes to allow it")
    console = app.term.console()
    console.print(f"restoring to {_target(plan_result)} will:", soft_wrap=True)  # (escaped)
    for line in describe(plan_result):
        console.print(_styled(console, line), soft_wrap=True)
    if not confirm(f"delete {len(deletes)} file(s) and restore?", default=False):
        raise Refused("restore cancelled; nothing changed")


def _styled(console, line: str):
    word = line.split(maxsplit=1)[0] if line.strip() else ""
    style = {"delete": "red", "overwrite": "yellow", "create": "green", "safe": "cyan",
             "FAILED": "bold red"}.get(word, "")
    return styled(console, line, style)


def report(app: App, result: rs.RestoreResult, paths, as_json: bool, headline: str,
            extras: dict | None = None, kind: str = "restore") -> None:
    """`extras`: the target's agent state and the external actions after it (agent.state).
    A restore (or undo: `kind`) that failed midway says so first, instead of `headline`."""
    extras = extras or {}
    failed = result.outcome is not None and not result.success
    if as_json:
        data = restore_dict(result, None)
        data["plan"] = result.plan.counts()
        if result.outcome is None:  # a dry run (or plan) that worked
            data["success"] = True
            data["dry_run"] = True
        if paths:
            data["paths"] = list(paths)
        if result.plan.gone:
            data["already_gone"] = names(result.plan.gone)
        data["left_out"] = left_out.as_json(_left_out(result, paths)[0])
        if result.git is not None:
            data["git"] = {k: v for k, v in vars(result.git).items()}
        if result.git_hint:
            data["git_hint"] = result.git_hint
        data.update(extras)
        click.echo(json.dumps(data, indent=2))
    else:
        console = app.term.console()
        if failed:
            console.print(styled(console, visible(result.failed_midway(kind, _target(result))),
                                 "bold red"), soft_wrap=True)
        else:
            console.print(visible(headline), soft_wrap=True)  # a path, a reason: written out
        for line in describe(result):
            console.print(_styled(console, line), soft_wrap=True)
        found, total = _left_out(result, paths)
        in_place = result.outcome is None or result.pre_rollback is not None
        for line in left_out.lines(found, total, f"not in {_target(result)}, so not "
                                   "restored ({count} file(s) it left out):",
                                   result.directory if in_place else None):
            console.print(line, soft_wrap=True, markup=False, highlight=False)
        if extras.get("state"):
            docs = visible(", ".join(sorted(extras["state"])))
            console.print(f"  agent state at {result.target.short}: {docs} "
                          f"(`rewind show {result.target.short}` prints it)", soft_wrap=True)
        for warning in extras.get("warnings", []):
            app.term.warn(warning)
    if failed:
        sys.exit(1)


def describe(result: rs.RestoreResult) -> list[str]:
    """Human lines for a plan (dry run) or an applied restore, written out (never obeyed:
    a file's name, an error naming one)."""
    plan, outcome = result.plan, result.outcome
    lines = []
    counts = plan.counts()
    if outcome is None:
        if result.safe:
            lines.append(f"  {SAFE_WHY}")
        for kind, verb in (("overwrite", "overwrite"), ("create", "create"),
                           ("delete", "delete"), ("chmod", "change mode of")):
            if counts[kind]:
                lines.append(f"  {verb} {counts[kind]}: {_listing(plan.of(kind))}")
        if not plan.actions:
            lines.append("  nothing to change: the files already match")
    else:
        lines.append(f"  {len(outcome.written)} file(s) written, {len(outcome.deleted)} deleted")
        for path, error in outcome.failed:
            lines.append(f"  FAILED {quote_path(path)}: {error}")
        if outcome.not_attempted:
            lines.append(f"  not attempted: {_listing(outcome.not_attempted)}")
        if outcome.appeared:
            lines.append(f"  kept (appeared during the restore, in no checkpoint yet): "
                         f"{_listing(outcome.appeared)}")
    if plan.kept_user_edits:
        lines.append(f"  kept your edits: {_listing(plan.kept_user_edits)}")
    if plan.kept_not_agent:
        lines.append(f"  kept (not written by the agent; --all restores them): "
                     f"{_listing(plan.kept_not_agent)}")
    if plan.gone:
        lines.append(f"  already gone (created by the restore, deleted since): "
                     f"{_listing(plan.gone)}")
    if plan.untouched:
        lines.append(f"  untouched (ignored or uncaptured files in the way, kept): "
                     f"{_listing(plan.untouched)}")
    if result.git is not None:
        lines += result.git.lines()
    elif result.git_hint:
        lines.append(f"  {result.git_hint}")
    if result.pre_rollback:
        lines.append(f"  pre-rollback snapshot {result.pre_rollback[:8]}: `rewind undo` "
                     "puts everything back")
    return [visible(line) for line in lines]


def _left_out(result: rs.RestoreResult, paths) -> tuple[list, int]:
    """What the checkpoint restored left out (under the PATHS restored, when named)."""
    within = None
    if paths and result.pre_rollback is not None:
        within = _project_paths(tuple(paths), result.directory)
    return left_out.of(result.target.trailers, within)


def _listing(items: list[bytes]) -> str:
    shown = ", ".join(quote_path(p) for p in items[:SHOW])
    return shown + (f" ... and {len(items) - SHOW} more" if len(items) > SHOW else "")


COMMANDS = [restore]
