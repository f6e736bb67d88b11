"""`rewind revert` and `rewind redo`: undo an agent session's steps or turns, and take that
back."""

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
    "rewind revert turn-3           # the files as before turn 3 (and its session's later turns)",
    "rewind revert step-7 --json",
    "rewind revert 1f2e --session 3a4b   # a turn name two sessions share",
))
@click.argument("step_or_turn")
@dir_option
@click.option("--session", metavar="ID", default=None,
              help="The session STEP_OR_TURN is of (an id or its first characters), when "
                   "two sessions share its name.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def revert(app: App, step_or_turn: str, directory: str | None, session: str | None,
           as_json: bool) -> None:
    """Take back STEP_OR_TURN and the later steps of its session (agent hooks' or
    begin_step/end_step's).

    Each file they changed goes back as it was before them, files they created are
    deleted, other files are untouched: other sessions' work stays, and a file another
    session changed too keeps its bytes and is named."""
    _run(app.manager.revert_to(str(app.project_dir(directory)), step_or_turn, session),
         as_json, "reverted")


@click.command(epilog=examples(
    "rewind redo                    # take the last revert back",
))
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def redo(app: App, directory: str | None, as_json: bool) -> None:
    """Undo the last `rewind revert`: the files as they were just before it (a file
    changed since the revert keeps its bytes and is named)."""
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
    session = session_name(result.get("agent"), result.get("session"))
    out = [f"{verb} turn(s) {turns}" + (f" of {session}" if session else "")]
    for key, label in (("restored_files", "restored"), ("deleted_files", "deleted")):
        if result.get(key):
            out.append(f"  {label}: {', '.join(quote_path(p) for p in result[key])}")
    for kept in result.get("kept") or []:
        out.append(f"  kept: {quote_path(kept['path'])} ({kept_why(kept)})")
    if result.get("pre_rollback"):
        out.append(f"  pre-rollback snapshot {result['pre_rollback'][:8]}: {undo} puts "
                   "everything back")
    return out


def session_name(agent: str | None, session: str | None) -> str:
    """`claude-code session 3f2a...` (escaped: both come from an agent's payload)."""
    if not agent and not session:
        return ""
    return visible(f"{agent or 'agent'} session {session or '?'}")


def kept_why(kept: dict) -> str:
    """Why a revert or redo left a file as it is."""
    others = ", ".join(session_name(s.get("agent"), s.get("session")) or "a step of no session"
                       for s in kept.get("sessions") or [])
    if kept.get("when") == "since":
        return "changed since the revert: its bytes stay"
    if kept.get("when") == "unrecorded":
        return (f"changed after this session did by no recorded tool call, while {others} "
                "worked here: it may be theirs, so its bytes stay")
    if kept.get("when") == "same time":
        return (f"changed while {others} ran too: whose change it is cannot be told, so "
                "its bytes stay")
    return f"{others} changed it after this session did: its bytes stay"


COMMANDS = [revert, redo]
