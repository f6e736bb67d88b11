"""`rewind checkpoint`, `rewind list`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

# The store's faces import a name's module on first use; each command imports the rest
# of what it uses itself (rich, the mount's locator, the capture, other agents): cli.group.
from rewindfs import store as st
from rewindfs.cli.help import examples
from rewindfs.cli.options import (
    dir_option_named,
    json_option,
    output_options,
    refuse_together,
)
from rewindfs.cli.output import taken
from rewindfs.cli.output.feedback import capture_progress
from rewindfs.cli.target import remote_option
from rewindfs.cli.target import resolve as resolve_target
from rewindfs.errors import InvalidInput, NotFound, StoreError

if TYPE_CHECKING:

    from rewindfs.cli.app import App
    from rewindfs.cli.output import listing
    from rewindfs.cli.target import Target



def _directory(positional: str | None, option: str | None) -> str | None:
    if positional and option and positional != option:
        raise click.UsageError("give the directory once: as DIR or with -C")
    return positional or option


@click.command(epilog=examples(
    "rewind checkpoint                       # the project around the current directory",
    "rewind checkpoint -m 'before refactor'  # with a reason",
    "rewind checkpoint --label v1            # a name you can restore by; never pruned",
    "rewind checkpoint --no-git              # the files only, not the repository's refs",
    "rewind checkpoint ~/src/app --json",
))
@click.argument("directory", required=False, type=click.Path(), metavar="[DIR]")
@dir_option_named("directory_opt")
@click.option("-m", "--message", "reason", default=taken.DEFAULT_REASON, show_default=True,
              help="Why (the checkpoint's reason).")
@click.option("--label", help="Name the checkpoint (unique per project; never auto-pruned).")
@click.option("--git/--no-git", "git", default=True, show_default=True,
              help="Record the project's git repository too (.git: refs, HEAD, index, "
                   "config, hooks and their objects), for `rewind restore --git`.")
@json_option
@click.pass_obj
def checkpoint(app: App, directory: str | None, reason: str, label: str | None, git: bool,
               as_json: bool, **kw: str | None) -> None:
    """Take a checkpoint of the project now.

    When the project has a git repository (.git), its state is recorded with the
    checkpoint: only what the store does not hold yet is copied (the first time, its
    history; the closing note says what it cost)."""
    from rewindfs.store.history import refuse_taken as refuse_taken_label
    from rewindfs.store.objects import refuse_inside_mount

    given = _directory(directory, kw.get("directory_opt"))
    # A checkpoint in a mount is not a project, whatever project is found above it.
    refuse_inside_mount(given or os.getcwd())
    workdir = app.project_dir(given)
    if label:
        refuse_taken_label(app.store, st.project_hash(workdir), label)
    started = time.time_ns()
    recorder = _recorder(app) if git else None
    with capture_progress(app.term, "checkpoint"):
        result = app.manager.take(str(workdir), reason, recorder=recorder)
    note = recorder.note() if recorder is not None else None
    if label and result.commit:
        st.set_label(app.store, result.project, label, result.commit)
    if app.home == os.environ.get("HERMES_HOME"):
        _stamp_later(app, result, started)
    if as_json:
        click.echo(taken.as_json(result, label, note))
        return
    for line in taken.lines(result, reason, label, note):
        click.echo(line)
    for warning in taken.warnings(result):
        app.term.warn(warning)


def _recorder(app: App):
    """The repository's state, recorded with the checkpoint (store.projectgit)."""
    from rewindfs.store.projectgit import Recorder

    return Recorder(app.settings.git_bounds())


def _stamp_later(app: App, result, started: int) -> None:
    """The project's stat stamp, written by a detached child once this command is done, so
    the next agent hook with nothing changed reads no object. Only for the settings the
    stamp's key covers: $HERMES_HOME's."""
    from rewindfs.config import capture_key
    from rewindfs.store.history import stamp

    if result.commit and result.tree:
        workdir = Path(result.workdir)
        stamp.record_later(app.layout.store, result.project, workdir, result.commit,
                           result.tree, started, capture_key(workdir, app.settings.home),
                           result.skipped_files)


@click.command("list", epilog=examples(
    "rewind list                  # this project: number, id, age, reason, changes",
    "rewind list ~/src/app",
    "rewind list --all-projects",
    "rewind list --json | jq '.[0].hash'",
    "rewind list --remote origin  # every project origin holds (after rewind fetch)",
    "rewind list -C @origin/app   # one of them",
    "rewind list --agent kilo     # Kilo Code's steps here; restore with kilo:N",
    "rewind list --session 3f2a   # the checkpoints of one agent session",
))
@click.argument("directory", required=False, type=click.Path(), metavar="[DIR]")
@dir_option_named("directory_opt")
@click.option("--all-projects", is_flag=True,
              help="Every project in the store, and those fetched from other machines.")
@remote_option
@click.option("--agent", type=click.Choice(["kilo", "opencode"]), metavar="kilo|opencode",
              help="That agent's own snapshots of the project instead (read-only).")
@click.option("--session", metavar="ID", default=None,
              help="Only the checkpoints the hooks took for this agent session (an id or "
                   "its first characters), numbered as in the whole list.")
@json_option
@output_options
@click.pass_obj
def list_(app: App, directory: str | None, all_projects: bool, remote: str | None,
          agent: str | None, session: str | None,
          as_json: bool, **kw: str | None) -> None:
    """List checkpoints, newest first (1 = newest).

    Pre-rollback snapshots (saved by every restore, undo and revert) are listed
    with `-` instead of a number: restoring never renumbers your checkpoints. Use
    their id to restore one. In a history broken by a damaged checkpoint (a warning
    names it), checkpoints found past the break are listed with `?`: use their id or
    label. With --remote NAME alone: every project NAME holds. With --agent, the steps
    Kilo Code or OpenCode took snapshots of, newest first, as `kilo:N` references.
    """
    from rewindfs.cli.output import listing
    from rewindfs.cli.target import Target
    from rewindfs.cli.target import fetched as fetched_targets
    from rewindfs.fs.locate import our_mount
    from rewindfs.store.history import projects, total_size

    given = _directory(directory, kw.get("directory_opt"))
    refuse_together(**{"--all-projects": all_projects, "--remote": remote})
    refuse_together(**{"--all-projects": all_projects, "--agent": agent})
    refuse_together(**{"--remote": remote, "--agent": agent})
    refuse_together(**{"--session": session, "--agent": agent})
    refuse_together(**{"--session": session, "--all-projects": all_projects})
    if session is not None and not session.strip():
        raise InvalidInput("--session needs a session id (or its first characters)")
    if agent:
        from rewindfs.cli.commands import agents

        agents.list_steps(app, app.project_dir(given), agent, as_json)
        return
    many = all_projects or (remote is not None and not given)
    if all_projects:
        targets = [Target(r.h16, r.workdir) for r in projects.list_records(app.store.layout)] \
            if app.store.exists() else []
        targets += fetched_targets(app, own=False)
    elif many:
        from rewindfs.store.remote import remotes

        remotes.get(app.store.layout, remote)  # an unknown name says so
        targets = fetched_targets(app, remote, own=True)
    else:
        targets = [resolve_target(app, given, remote)]
        workdir = targets[0].workdir
        if given and not targets[0].fetched and not workdir.is_dir() \
                and not _has_checkpoints(app, workdir):
            # A deleted project's checkpoints stay listable; a typo is an error.
            raise NotFound(f"no such directory: {workdir}")
    mount = our_mount(app.settings.mount_dir) if any(not t.fetched for t in targets) else None

    def listed(target: Target) -> list[listing.Listed] | listing.Paged:
        if not app.store.exists():
            return []
        repo = app.store.repo

        def stats(c):
            return st.stats(repo, c, target.key)

        def size(h16, c):
            return total_size(repo, app.store.layout, h16, c)

        if not many and not as_json and mount is None and not target.fetched and not session:
            long = _paged(app, target, stats, size)
            if long is not None:
                return long
        found = st.checkpoints(repo, target.key)
        if session:
            found = [c for c in found if of_session(c.trailers, session)]
        rows = listing.listed(target, found, stats, size, mount)
        if target.fetched:
            _mark_over(repo, rows)
        return rows

    report = ((target, listed(target)) for target in targets)
    if as_json:
        click.echo(listing.as_json(list(report), many))  # type: ignore[arg-type]
        return
    if not targets:
        click.echo(f"{remote} holds no projects (`rewind fetch {remote}` first?)" if remote
                   else "no projects have checkpoints yet")
    from rewindfs.store.history import Surprise

    with app.term.paged() as console:
        try:
            for target, lines in report:  # each project printed as soon as it is read
                listing.print_list(app, console, target.title, lines)
        except Surprise as exc:
            _surprised(app, targets[0], exc)


def of_session(trailers: dict[str, str], session: str) -> bool:
    """Whether a checkpoint's trailers name `session` (an id, or its first characters)."""
    from rewindfs.agent.stepbegin import SESSION_TRAILER

    found = trailers.get(SESSION_TRAILER, "")
    return bool(found) and found.startswith(session)


def _mark_over(repo, rows: list) -> None:
    """A fetched project's checkpoints over their bounds, each with why."""
    from rewindfs.store.history import bounds

    for line in rows:
        try:
            line.over = bounds.measure(repo, line.cp.tree_id).over
        except (KeyError, ValueError, OSError):
            continue  # damage: reading it says so


def _paged(app: App, target: Target, stats, size) -> listing.Paged | list[listing.Listed] | None:
    """A long history read from its tip as far as it is shown (store.history.records.listpage), or
    a short one read through the same records; None: read it whole."""
    from rewindfs.cli.output import listing
    from rewindfs.store.history import Surprise, page

    found = page(app.store.repo, target.key)
    if found is None:
        return None
    if found.rows > listing.EXACT_ROWS:
        return listing.paged(target, found, stats, size)
    try:
        return listing.listed(target, list(found), stats, size, None)
    except Surprise:
        return None


def _surprised(app: App, target: Target, exc: Exception) -> None:
    """Rows past the first screen did not read as the records said (damage since they were
    written): the records are dropped, so the next read walks the objects and says what
    is wrong, the one way it always does."""
    from rewindfs.cli.output import listing
    from rewindfs.store.history import forget_records

    forget_records(app.store.layout, target.key)
    raise StoreError(listing.cut_short(exc))


def _has_checkpoints(app: App, workdir) -> bool:
    return app.store.exists() and bool(st.checkpoints(app.store.repo, st.project_hash(workdir)))


COMMANDS = [checkpoint, list_]
