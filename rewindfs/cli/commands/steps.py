"""`rewind revert` and `rewind redo`: undo an agent's steps or turns, and take that back."""

from __future__ import annotations

import json
import sys

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option
from rewindfs.cli.output.human import visible
from rewindfs.errors import RewindError
from rewindfs.store.history import quote_path


@click.command(epilog=examples(
    "rewind revert turn-3           # the files as before turn 3 (and every later step)",
    "rewind revert step-7 --json",
))
@click.argument("step_or_turn")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def revert(app: App, step_or_turn: str, directory: str | None, as_json: bool) -> None:
    """Put back the files changed by STEP_OR_TURN and every later step (recorded with
    begin_step/end_step); files those steps created are deleted, others untouched."""
    _run(app.manager.revert_to(str(app.project_dir(directory)), step_or_turn), as_json,
         "reverted")


@click.command(epilog=examples(
    "rewind redo                    # take the last revert back",
))
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def redo(app: App, directory: str | None, as_json: bool) -> None:
    """Undo the last `rewind revert`: the files as they were just before it."""
    _run(app.manager.unrevert(str(app.project_dir(directory))), as_json, "redid")


def _run(result: dict, as_json: bool, verb: str) -> None:
    if not result.get("success"):
        raise RewindError(result.get("error") or f"could not {verb[:-2]}")
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo("\n".join(outcome(result, verb, "`rewind undo`")))
    sys.stdout.flush()


def outcome(result: dict, verb: str, undo: str) -> list[str]:
    """What a revert or redo did, as lines (here and in `rewind ui`); `undo`: what takes
    it back."""
    turns = ", ".join(visible(t) for t in result.get("turns") or []) or "-"
    out = [f"{verb} turn(s) {turns}"]
    for key, label in (("restored_files", "restored"), ("deleted_files", "deleted")):
        if result.get(key):
            out.append(f"  {label}: {', '.join(quote_path(p) for p in result[key])}")
    if result.get("pre_rollback"):
        out.append(f"  pre-rollback snapshot {result['pre_rollback'][:8]}: {undo} puts "
                   "everything back")
    return out


COMMANDS = [revert, redo]
