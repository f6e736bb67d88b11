"""`rewind restore` and `rewind undo`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from rewindfs import restore as rs
from rewindfs.agent.manager import names, restore_dict
from rewindfs.agent.state import restore_report
from rewindfs.cli.app import App
from rewindfs.errors import Refused

SHOW = 20  # paths listed per group before "... and N more"


@click.command()
@click.argument("reference")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-C", "--dir", "directory", type=click.Path(),
              help="Project directory (default: the project around the cwd).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Delete files without asking.")
@click.option("--all", "restore_all", is_flag=True,
              help="Restore every file, also ones a person edited since the agent wrote them.")
@click.option("--safe", is_flag=True, help="Only revert files still as the agent wrote them.")
@click.option("--to", "dest", type=click.Path(),
              help="Write the checkpoint (or PATHS) into this new directory instead.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def restore(app: App, reference: str, paths: tuple[str, ...], directory: str | None,
            dry_run: bool, yes: bool, restore_all: bool, safe: bool, dest: str | None,
            as_json: bool) -> None:
    """Restore the project, or PATHS, to checkpoint REFERENCE (pre-rollback snapshot first)."""
    workdir = app.project_dir(directory)
    if dest:
        result = rs.export(app.store, workdir, reference, dest, _project_paths(paths, workdir),
                           dry_run=dry_run)
        _report(result, None, as_json,
                f"plan for writing checkpoint {result.target.short} to {dest}; nothing was "
                "written" if dry_run else f"wrote checkpoint {result.target.short} to {dest}")
        return
    options = rs.Options(
        paths=list(paths) or None, cwd=_path_base(workdir),
        safe=False if restore_all else (True if safe else None),
        limits=app.manager.limits, extra_excludes=app.manager.extra_excludes,
    )
    plan_result = rs.dry_run(app.store, workdir, reference, options)
    if plan_result.safe and options.safe is None:
        click.echo("rewind: note: safe restore (the agent recorded writes since this "
                   "checkpoint): files a person changed are kept; --all restores them too",
                   err=True)
    if dry_run:
        _report(plan_result, None, as_json, f"plan for restoring to {plan_result.target.short} "
                f"({plan_result.target.reason}); nothing was changed")
        return
    deletes = plan_result.plan.deletes
    if deletes and not yes:
        _confirm_deletes(deletes)
    options.confirmed_deletes = set(deletes)
    result = rs.restore(app.store, workdir, reference, options)
    _report(result, paths, as_json, f"restored {workdir} to {result.target.short} "
            f"({result.target.reason})", restore_report(app.store, result))


@click.command()
@click.option("-C", "--dir", "directory", type=click.Path(),
              help="Project directory (default: the project around the cwd).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def undo(app: App, directory: str | None, as_json: bool) -> None:
    """Undo the last restore (an undo can itself be undone)."""
    workdir = app.project_dir(directory)
    result = rs.undo(app.store, workdir, rs.Options(limits=app.manager.limits,
                                                    extra_excludes=app.manager.extra_excludes))
    _report(result, None, as_json, f"undid the last restore of {workdir}: back to "
            f"{result.target.short}", restore_report(app.store, result))


def _path_base(workdir: Path) -> Path:
    """Relative PATHs are taken from the cwd inside the project, else from the project root
    (e.g. `-C` naming a project, or one that no longer exists, from elsewhere)."""
    cwd = Path(os.getcwd())
    return cwd if cwd == workdir or workdir in cwd.parents else workdir


def _project_paths(paths: tuple[str, ...], workdir: Path) -> list[str] | None:
    if not paths:
        return None
    return [os.fsdecode(rs.project_relative(p, workdir, cwd=_path_base(workdir))) for p in paths]


def _confirm_deletes(deletes: list[bytes]) -> None:
    listing = _listing(names(deletes))
    if not sys.stdin.isatty():
        raise Refused(f"restore would delete {len(deletes)} file(s) ({listing}); "
                      "rerun with --yes to allow it")
    click.echo(f"restore will delete {len(deletes)} file(s): {listing}")
    if not click.confirm("delete them?", default=False):
        raise Refused("restore cancelled; nothing changed")


def _report(result: rs.RestoreResult, paths, as_json: bool, headline: str,
            extras: dict | None = None) -> None:
    """`extras`: the target's agent state and the external actions after it (agent.state)."""
    extras = extras or {}
    if as_json:
        data = restore_dict(result, None)
        data["plan"] = result.plan.counts()
        if paths:
            data["paths"] = list(paths)
        if result.plan.gone:
            data["already_gone"] = names(result.plan.gone)
        data.update(extras)
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(headline)
        for line in describe(result):
            click.echo(line)
        if extras.get("state"):
            docs = ", ".join(sorted(extras["state"]))
            click.echo(f"  agent state at {result.target.short}: {docs} "
                       f"(`rewind show {result.target.short}` prints it)")
        for warning in extras.get("warnings", []):
            click.echo(f"rewind: warning: {warning}", err=True)
    if result.outcome is not None and not result.success:
        sys.exit(1)


def describe(result: rs.RestoreResult) -> list[str]:
    """Human lines for a plan (dry run) or an applied restore."""
    plan, outcome = result.plan, result.outcome
    lines = []
    counts = plan.counts()
    if outcome is None:
        for kind, verb in (("overwrite", "overwrite"), ("create", "create"),
                           ("delete", "delete"), ("chmod", "change mode of")):
            if counts[kind]:
                lines.append(f"  {verb} {counts[kind]}: {_listing(names(plan.of(kind)))}")
        if not plan.actions:
            lines.append("  nothing to change: the files already match")
    else:
        lines.append(f"  {len(outcome.written)} file(s) written, {len(outcome.deleted)} deleted")
        for path, error in outcome.failed:
            lines.append(f"  FAILED {os.fsdecode(path)}: {error}")
        if outcome.not_attempted:
            lines.append(f"  not attempted: {_listing(names(outcome.not_attempted))}")
    if plan.kept_user_edits:
        lines.append(f"  kept your edits: {_listing(names(plan.kept_user_edits))}")
    if plan.kept_not_agent:
        lines.append(f"  kept (not written by the agent; --all restores them): "
                     f"{_listing(names(plan.kept_not_agent))}")
    if plan.gone:
        lines.append(f"  already gone (created by the restore, deleted since): "
                     f"{_listing(names(plan.gone))}")
    if plan.untouched:
        lines.append(f"  untouched because ignored or not captured: "
                     f"{_listing(names(plan.untouched))}")
    if result.pre_rollback:
        lines.append(f"  pre-rollback snapshot {result.pre_rollback[:8]}: `rewind undo` "
                     "puts everything back")
    return lines


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:SHOW])
    return shown + (f" ... and {len(items) - SHOW} more" if len(items) > SHOW else "")


COMMANDS = [restore, undo]
