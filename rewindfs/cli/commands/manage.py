"""Changing what the store keeps: `rewind delete`, `rewind label`, `rewind forget`.

Each asks first on a terminal and, without one, refuses unless given -f (as
`prune` and `clear` do): they take history away.
"""

from __future__ import annotations

import json
import sys

import click

from rewindfs import store as st
from rewindfs.cli.app import App
from rewindfs.cli.commands.complete import complete_reference
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option, dir_option_named, json_option
from rewindfs.cli.output.human import visible
from rewindfs.cli.output.term import confirm
from rewindfs.errors import NotFound, Refused
from rewindfs.store.history import delete as deletion
from rewindfs.store.history import labels_by_commit, move_label, projects, remove_label, walk


def _confirm(question: str, what: str) -> None:
    if not sys.stdin.isatty():
        raise Refused(f"{what}; rerun with -f to allow it (no terminal to ask)")
    if not confirm(question, default=False):
        raise Refused("cancelled; nothing changed")


def _history(app: App, workdir):
    if not app.store.exists():
        raise NotFound(f"no checkpoints for {workdir}")
    return app.store.repo, st.project_hash(workdir)


def _name(cp: st.Checkpoint) -> str:
    which = f"checkpoint {cp.number}" if cp.number else "pre-rollback snapshot"
    return visible(f"{which} {cp.short} ({cp.reason})")


@click.command(epilog=examples(
    "rewind delete 3                 # asks first",
    "rewind delete 1a2b3c4d -f       # by id, without asking",
))
@click.argument("reference", shell_complete=complete_reference)
@dir_option
@click.option("-f", "--force", is_flag=True, help="Do not ask.")
@json_option
@click.pass_obj
def delete(app: App, reference: str, directory: str | None, force: bool, as_json: bool) -> None:
    """Delete one checkpoint from the project's history.

    The newest and the oldest go without touching any other checkpoint. One in the
    middle can only leave the history if every newer checkpoint is recreated
    without it: their ids change (labels and metadata follow), and this says so
    before asking. Its labels are removed with it.
    """
    workdir = app.project_dir(directory)
    repo, h16 = _history(app, workdir)
    cp = st.resolve(repo, h16, reference)
    position, rewritten = deletion.plan_position(repo, h16, cp)
    cost = (f"; the {rewritten} newer checkpoint(s) will get new ids" if rewritten else "")
    if not force:
        _confirm(f"delete {_name(cp)}{cost}?", f"delete would remove {_name(cp)}{cost}")
    # As confirmed, or refused (-f: as it finds it).
    done = deletion.delete(repo, app.store.layout, h16, cp,
                           expect=None if force else (position, rewritten))
    if as_json:
        click.echo(json.dumps({"deleted": done.checkpoint, "position": done.position,
                               "labels_removed": done.labels_removed,
                               "ids_changed": done.ids_changed}, indent=2))
        return
    click.echo(visible(f"deleted {_name(cp)} from {workdir}"))
    if done.labels_removed:
        click.echo(f"  removed its label(s): {', '.join(done.labels_removed)}")
    for old, new in done.ids_changed.items():
        click.echo(f"  {old[:8]} is now {new[:8]}")
    if position != deletion.PINNED:
        click.echo("  its files leave the store at the next gc (rewind prune)")


@click.command(epilog=examples(
    "rewind label                    # every label of the project",
    "rewind label before-refactor    # name the newest checkpoint",
    "rewind label v1 3               # name checkpoint 3",
    "rewind label v1 2 --move        # point an existing label at checkpoint 2",
    "rewind label -d v1              # remove a label (the checkpoint stays)",
))
@click.argument("name", required=False)
@click.argument("reference", required=False, shell_complete=complete_reference)
@dir_option
@click.option("--move", "-f", "move", is_flag=True,
              help="Move the label if it already names another checkpoint.")
@click.option("-d", "--delete", "remove", is_flag=True, help="Remove the label NAME.")
@json_option
@click.pass_obj
def label(app: App, name: str | None, reference: str | None, directory: str | None,
          move: bool, remove: bool, as_json: bool) -> None:
    """Name checkpoint REFERENCE (default: the newest) NAME, move or remove a label.

    A labelled checkpoint is never pruned automatically.
    """
    workdir = app.project_dir(directory)
    repo, h16 = _history(app, workdir)
    if remove:
        if not name or reference:
            raise click.UsageError("give just the label to remove: rewind label -d NAME")
        in_chain = {str(c.id) for c in walk(repo, st.Layout.project_ref(h16))}
        target = remove_label(app.store, h16, name)
        gone = target not in in_chain and not labels_by_commit(repo, h16).get(target)
        _say(as_json, {"removed": name, "hash": target, "still_listed": not gone},
             f"removed label {name!r} from {target[:8]}"
             + (" (it was kept only by this label and is no longer listed)" if gone else ""))
        return
    if not name:
        found = {label: cp for cp in st.checkpoints(repo, h16) for label in cp.labels}
        if as_json:
            click.echo(json.dumps({n: cp.id for n, cp in sorted(found.items())}, indent=2))
            return
        for n, cp in sorted(found.items()):
            click.echo(f"{n}\t{_name(cp)}")
        return
    cp = st.resolve(repo, h16, reference or "latest")
    if move:
        before = move_label(app.store, h16, name, cp.id)
        moved = f" (moved from {before[:8]})" if before and before != cp.id else ""
    else:
        st.set_label(app.store, h16, name, cp.id)
        before, moved = None, ""
    _say(as_json, {"label": name, "hash": cp.id, "previous": before},
         f"labelled {_name(cp)} as {name!r}{moved}")


def _say(as_json: bool, data: dict, text: str) -> None:
    click.echo(json.dumps(data, indent=2) if as_json else visible(text))


@click.command(epilog=examples(
    "rewind forget                   # the project around the cwd; asks first",
    "rewind forget ~/old/app -f",
    "rewind forget @origin/app       # one project fetched from origin (origin keeps it)",
))
@click.argument("directory", required=False, type=click.Path(), metavar="[DIR]")
@dir_option_named("directory_opt")
@click.option("-f", "--force", is_flag=True, help="Do not ask.")
@click.pass_obj
def forget(app: App, directory: str | None, force: bool, directory_opt: str | None) -> None:
    """Remove a project's whole history from the store (its files stay as they are).

    Only this project's own history: what was fetched from remotes for the same path
    stays (`rewind forget @REMOTE/NAME` forgets one fetched project, `rewind remote
    remove NAME` all of a remote's).
    """
    from rewindfs.cli.target import is_remote_spec
    from rewindfs.store.maintenance import remove_project

    if directory and directory_opt and directory != directory_opt:
        raise click.UsageError("give the directory once: as DIR or with -C")
    if is_remote_spec(app, directory or directory_opt):
        _forget_fetched(app, directory or directory_opt, force)
        return
    workdir = app.project_dir(directory or directory_opt)
    repo, h16 = _history(app, workdir)
    count = len(st.checkpoints(repo, h16))
    if not count and projects.read_record(app.store.layout, h16) is None:
        raise NotFound(f"no checkpoints for {workdir}")
    tip = _tip(repo, h16)
    if not force:
        _confirm(f"forget {workdir} and its {count} checkpoint(s)?",
                 f"forget would remove {count} checkpoint(s) of {workdir}")
    # The history confirmed, or refused (-f: whatever it holds by then).
    if not remove_project(app.store.layout, repo, h16,
                          lambda record: force or _tip(repo, h16) == tip):
        if _tip(repo, h16) != tip:
            raise Refused(f"{workdir} got a checkpoint since the question; nothing was "
                          "forgotten: run the command again")
        raise Refused(f"{workdir} is in use (a checkpoint or restore is running); "
                      "try again in a moment")
    click.echo(visible(f"forgot {workdir}: {count} checkpoint(s) removed; their files "
                       "leave the store at the next gc (rewind prune)"))


def _tip(repo, h16: str) -> str | None:
    ref = repo.references.get(st.Layout.project_ref(h16))
    return None if ref is None else str(ref.target)


def _forget_fetched(app: App, spec: str, force: bool) -> None:
    from rewindfs.cli.target import resolve as resolve_target
    from rewindfs.store.remote import remotes

    place = resolve_target(app, spec)
    found = place.fetched
    count = len(st.checkpoints(app.store.repo, place.key))
    if not force:
        _confirm(f"forget {place.spec} ({count} checkpoint(s) fetched from {found.remote})?",
                 f"forget would remove {count} fetched checkpoint(s) of {place.spec}")
    remotes.forget_fetched(app.store, found.remote, found.machine, found.h16)
    click.echo(visible(f"forgot {place.spec}: {count} fetched checkpoint(s) removed here; "
                       f"{found.remote} keeps them (`rewind fetch {found.remote}` brings "
                       "them back)"))


COMMANDS = [delete, label, forget]
