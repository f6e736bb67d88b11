"""`rewind undo`: take back the last restore (or several), as the restore journal records
them (rewindfs.restore.journal); each reported as `rewind restore` reports one."""

from __future__ import annotations

import json
import sys

import click

from rewindfs import restore as rs
from rewindfs.agent.results import restore_dict
from rewindfs.agent.state import restore_report
from rewindfs.cli.app import App
from rewindfs.cli.commands.restore import report
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option, json_option, refuse_together
from rewindfs.cli.output.feedback import restore_progress
from rewindfs.cli.output.human import human_age, visible
from rewindfs.errors import NotFound
from rewindfs.restore import journal
from rewindfs.store import project_hash


@click.command(epilog=examples(
    "rewind undo                 # take back the last restore (or undo: that redoes it)",
    "rewind undo --dry-run       # what it would put back; nothing changes",
    "rewind undo --list          # the restores still in effect, newest first",
    "rewind undo --steps 3       # take back the last three restores, newest first",
    "rewind undo -C ~/src/app --json",
))
@dir_option
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="Take back the last N restores still in effect (undos are not steps).")
@click.option("--list", "show_list", is_flag=True,
              help="List the restores still in effect, newest first; change nothing.")
@click.option("--dry-run", is_flag=True, help="Print what the undo would do; change nothing.")
@json_option
@click.pass_obj
def undo(app: App, directory: str | None, steps: int | None, show_list: bool, dry_run: bool,
         as_json: bool) -> None:
    """Undo the last restore that changed files (an undo can itself be undone), or several
    with --steps."""
    refuse_together(**{"--list": show_list, "--steps": steps})
    refuse_together(**{"--list": show_list, "--dry-run": dry_run})
    workdir = app.project_dir(directory)
    options = rs.Options(limits=app.limits, extra_excludes=app.extra_excludes)
    stack = journal.undoable(journal.path_for(app.store.layout, project_hash(workdir)))
    if show_list:
        _print_undo_list(app, stack, as_json)
        return
    if steps is None:
        if dry_run:
            result = rs.undo(app.store, workdir, options, dry_run=True)
            report(app, result, None, as_json, f"plan for undoing the last restore of "
                    f"{workdir} (back to {result.target.short}); nothing was changed")
            return
        with restore_progress(app.term):
            result = rs.undo(app.store, workdir, options)
        report(app, result, None, as_json, f"undid the last restore of {workdir}: back to "
                f"{result.target.short}", restore_report(app.store, result), kind="undo")
        return
    if steps > len(stack):
        raise NotFound(f"only {len(stack)} restore(s) of {workdir} to undo "
                       "(`rewind undo --list` shows them)")
    chosen = stack[:steps]
    if dry_run:
        _print_undo_list(app, chosen, as_json, "would undo, newest first (nothing changed):")
        return
    results = []
    for entry in chosen:  # newest first: each puts back the state its restore found
        with restore_progress(app.term):
            results.append(rs.undo(app.store, workdir, rs.Options(
                limits=app.limits, extra_excludes=app.extra_excludes),
                entry=entry))
    if as_json:
        click.echo(json.dumps([restore_dict(r, None) for r in results], indent=2))
    else:
        for entry, result in zip(chosen, results, strict=True):
            report(app, result, None, False, f"undid the restore to {entry.target[:8]} "
                    f"of {_when(entry.time)}: back to {result.target.short}", kind="undo")
    if any(not r.success for r in results):
        sys.exit(1)


def _print_undo_list(app: App, stack: list, as_json: bool,
                     title: str = "restores still in effect, newest first:") -> None:
    if as_json:
        click.echo(json.dumps([{"step": i, "kind": e.kind, "target": e.target,
                                "pre_rollback": e.pre_rollback, "time": e.time,
                                "files": len(e.touched) if e.complete else len(e.plan),
                                "finished": e.complete}
                               for i, e in enumerate(stack, start=1)], indent=2))
        return
    if not stack:
        click.echo("no restores to undo")
        return
    click.echo(title)
    for i, e in enumerate(stack, start=1):
        files = len(e.touched) if e.complete else len(e.plan)
        state = "" if e.complete else " (did not finish)"
        click.echo(visible(f"  {i}. {e.kind} to {e.target[:8]}, {_when(e.time)}, "
                           f"{files} file(s){state}; undo puts back {e.pre_rollback[:8]}"))


def _when(epoch: float) -> str:
    return human_age(epoch)


COMMANDS = [undo]
