"""`rewind prune`, `clear`, `clear-legacy`, `adopt` (`config` and `status`: cli.commands.status).

Anything that deletes history asks first on a terminal, deletes only what it
showed, and refuses (one line, exit 1) without a terminal unless given -f.
Progress bars appear only when stderr is a terminal.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.cli.output.human import (
    SHOW,
    human_age,
    human_bytes,
    human_date,
    setting_text,
    visible,
)
from rewindfs.cli.output.term import confirm
from rewindfs.errors import Refused
from rewindfs.store.history import State
from rewindfs.store.maintenance import (
    legacy,
    quiet,
    sizecap,
    store_status,
    sweep,
    wipe,
)
from rewindfs.store.objects import Layout, Store


def _on_terminal() -> bool:
    return sys.stderr.isatty()


def _confirm(question: str, what: str) -> None:
    """Ask on a terminal; without one, refuse unless the caller had -f."""
    if not sys.stdin.isatty():
        raise Refused(f"{what}; rerun with -f to allow it (no terminal to ask)")
    if not confirm(question, default=False):
        raise Refused("cancelled; nothing changed")


# -- prune ------------------------------------------------------------------------------

@click.command(epilog=examples(
    "rewind prune --dry-run              # what would go",
    "rewind prune --retention-days 3 --max-size-mb 200 -f",
))
@click.option("--retention-days", type=float,
              help="Remove projects untouched for N days (default: config retention_days).")
@click.option("--max-size-mb", type=int,
              help="Drop oldest checkpoints until the store is under N MB "
                   "(default: config max_total_size_mb; 0 = no cap).")
@click.option("--keep-orphans", is_flag=True,
              help="Keep projects whose directory was deleted (until their quarantine ends).")
@click.option("--dry-run", is_flag=True, help="Show what would go; change nothing.")
@click.option("-f", "--force", is_flag=True, help="Do not ask before removing projects.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@click.pass_obj
def prune(app: App, retention_days: float | None, max_size_mb: int | None, keep_orphans: bool,
          dry_run: bool, force: bool, as_json: bool) -> None:
    """Remove stale and deleted projects, pre-v2 repositories and expired legacy archives,
    cap the size, and free the space now.

    A project whose directory was deleted is removed here (after confirmation) even
    while its quarantine lasts; the automatic sweep waits for the quarantine to end.
    """
    app.flags.update(retention_days=retention_days, max_total_size_mb=max_size_mb,
                     delete_orphans=False if keep_orphans else None)
    s = app.settings
    layout = Layout(s.base)
    policy = sweep.Policy(s.retention_days, s.delete_orphans, s.max_total_size_mb,
                          purge_deleted=True, reclaim_now=True)
    todo = sweep.plan(layout, policy)
    echo = (lambda *a, **k: None) if as_json else click.echo
    echo(f"retention_days: {setting_text(policy.retention_days)}  delete_orphans: "
         f"{setting_text(policy.delete_orphans)}  max_total_size_mb: {policy.max_total_size_mb}")
    for line in _plan_lines(todo):
        echo(visible(line))  # projects' paths: written out, never obeyed
    if dry_run:
        preview = _cap_preview(layout, policy, todo)
        if as_json:
            click.echo(json.dumps(_plan_dict(todo, preview), indent=2))
            return
        if preview:
            echo(preview)
        echo("dry run: nothing changed")
        return
    doomed = len(todo.projects) + len(todo.repos)
    if doomed and not force:
        _confirm(f"remove these {doomed} project(s) and their history?",
                 f"prune would remove {doomed} project(s)")
    terminal = _on_terminal() and not as_json
    report = sweep.run(layout, policy, todo, progress=app.term.iterate if terminal else quiet,
                       show_git_progress=terminal)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        for line in _report_lines(report):
            click.echo(visible(line))
    if report.errors:
        sys.exit(1)


def _plan_lines(todo: sweep.Plan) -> list[str]:
    lines = [f"scanned {todo.scanned} project(s)"]
    if todo.projects or todo.repos:
        lines.append(f"to remove ({len(todo.projects) + len(todo.repos)}):")
        for doomed in todo.projects[:SHOW]:
            why = f"deleted since {human_date(doomed.deleted_at)}" \
                if doomed.reason is State.DELETED else f"last touch {human_age(doomed.last_touch)}"
            lines.append(f"  {doomed.reason.value:<7} {doomed.workdir}  ({why})")
        if len(todo.projects) > SHOW:
            lines.append(f"  ... and {len(todo.projects) - SHOW} more")
        for repo in todo.repos[:SHOW]:
            lines.append(f"  {repo.reason.value:<7} {repo.repo.path}  (pre-v2 repository of "
                         f"{repo.repo.workdir or 'an unknown directory'})")
    for kept in todo.quarantined[:SHOW]:
        lines.append(f"  kept    {kept.workdir}  (deleted since {human_date(kept.deleted_at)})")
    if todo.archives:
        lines.append(f"expired legacy archives: {', '.join(a.name for a in todo.archives)}")
    if todo.empty:
        lines.append("no orphan or stale projects, no expired legacy archives")
    return lines


def _cap_preview(layout: Layout, policy: sweep.Policy, todo: sweep.Plan) -> str | None:
    store = Store(layout)
    if policy.max_total_size_mb <= 0 or not store.exists():
        return None
    cap_plan = sizecap.plan(layout, store.repo, policy.max_total_size_mb * sweep.MiB,
                            exclude={d.h16 for d in todo.projects})
    if not cap_plan.drops:
        return (f"size cap {policy.max_total_size_mb} MB: the store is under it "
                f"({human_bytes(cap_plan.live if cap_plan.live is not None else cap_plan.physical)}"
                " in use)")
    projects = len({d.h16 for d in cap_plan.drops})
    return (f"size cap {policy.max_total_size_mb} MB: {human_bytes(cap_plan.live)} in use; "
            f"would drop the {len(cap_plan.drops)} oldest checkpoint(s) of {projects} "
            f"project(s), leaving about {human_bytes(cap_plan.expected_live)}")


def _plan_dict(todo: sweep.Plan, preview: str | None) -> dict[str, Any]:
    return {"scanned": todo.scanned,
            "remove": [{"hash": d.h16, "workdir": d.workdir, "reason": d.reason.value,
                        "last_touch": d.last_touch, "deleted_at": d.deleted_at}
                       for d in todo.projects],
            "remove_pre_v2": [{"path": str(r.repo.path), "workdir": r.repo.workdir,
                               "reason": r.reason.value} for r in todo.repos],
            "legacy_archives": [a.name for a in todo.archives], "size_cap": preview}


def _report_lines(report: sweep.Report) -> list[str]:
    lines = [
        f"Scanned:              {report.scanned}",
        f"Deleted orphan:       {report.deleted_orphan}",
        f"Deleted stale:        {report.deleted_stale}",
        f"Legacy archives:      {report.deleted_legacy} deleted",
        f"Checkpoints dropped:  {report.dropped_checkpoints} (size cap)",
    ]
    if report.deleted_pre_v2:
        lines.append(f"Pre-v2 repositories:  {report.deleted_pre_v2} deleted")
    if report.quarantined:
        lines.append(f"Kept (quarantine):    {report.quarantined}")
    if report.kept_busy:
        lines.append(f"Kept (in use now):    {report.kept_busy}")
    freed = f"Bytes reclaimed:      {human_bytes(report.bytes_freed)}"
    if not report.gc_ran:
        freed += " (gc did not run)"
    elif report.hermes_active:
        freed += (f" (objects younger than {report.kept_younger_than_minutes:.0f} min kept: "
                  "Hermes checkpointed recently)")
    elif report.kept_younger_than_minutes:
        freed += (f" (objects younger than {report.kept_younger_than_minutes:.0f} min kept: "
                  "checkpoints never paused)")
    return [*lines, f"Errors:               {report.errors}", freed]


# -- clear ------------------------------------------------------------------------------

@click.command(epilog=examples(
    "rewind clear                        # asks first; -f in scripts",
))
@click.option("-f", "--force", is_flag=True, help="Do not ask.")
@click.pass_obj
def clear(app: App, force: bool) -> None:
    """Delete the whole checkpoint base: every project's history and the legacy archives."""
    s = app.settings
    layout = Layout(s.base)
    if not layout.base.exists():
        click.echo(f"nothing to clear: {layout.base} does not exist")
        return
    info = store_status(layout, s.retention_days, sizes=False)
    click.echo(f"this deletes the whole checkpoint base {info.base}: "
               f"{human_bytes(info.total_size_bytes)}, {info.project_count} project(s), "
               f"{len(info.legacy_archives)} legacy archive(s)")
    if not force:
        _confirm("delete all checkpoint history?",
                 f"clear would delete {info.project_count} project(s)' history")
    _unmount_if_mounted(s.mount_dir)
    freed = wipe.clear_base(layout)
    click.echo(f"cleared {layout.base}; reclaimed {human_bytes(freed)}")


def _unmount_if_mounted(path) -> None:
    """A mount would keep serving deleted history (and the store's files open): detach it."""
    from rewindfs.fs import lifecycle

    state = lifecycle.mount_state(path)
    kind = lifecycle.mounted_type(path) or ""
    if state is lifecycle.MountState.STALE or (state is lifecycle.MountState.MOUNTED
                                               and kind.startswith("fuse")):
        lifecycle.unmount(path, lazy=True)
        click.echo(f"unmounted {path}")


@click.command("clear-legacy", epilog=examples(
    "rewind clear-legacy -f",
))
@click.option("-f", "--force", is_flag=True, help="Do not ask.")
@click.pass_obj
def clear_legacy(app: App, force: bool) -> None:
    """Delete the legacy-* archives of Hermes v1 checkpoint repositories."""
    found = legacy.archives(Layout(app.settings.base))
    if not found:
        click.echo("no legacy archives to clear")
        return
    sizes = {a.name: a.size() for a in found}
    click.echo(f"{len(found)} legacy archive(s), {human_bytes(sum(sizes.values()))}:")
    for archive in found:
        click.echo(f"  {archive.name:<40}  {human_bytes(sizes[archive.name]):>10}")
    if not force:
        _confirm("delete them?", f"clear-legacy would delete {len(found)} archive(s)")
    freed = sum(legacy.delete(a) for a in found)
    click.echo(f"deleted {len(found)} archive(s); reclaimed {human_bytes(freed)}")


# -- adopt ------------------------------------------------------------------------------

@click.command()
@click.argument("old_path", type=click.Path())
@click.argument("new_path", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def adopt(app: App, old_path: str, new_path: str, as_json: bool) -> None:
    """Continue the history of a moved project at its new path.

    OLD_PATH is where the project was (it must be gone), NEW_PATH where it is now
    (before its first checkpoint there). Checkpoints, labels, notes, step log and
    pending actions move with it. A moved project whose first checkpoint at the new
    path is identical to its last one is adopted automatically.

    \b
    Example:
      mv ~/src/app ~/work/app
      rewind adopt ~/src/app ~/work/app
    """
    from rewindfs.store.history import adopt

    done = adopt.adopt(app.store, old_path, new_path)
    if as_json:
        click.echo(json.dumps(asdict(done), indent=2))
        return
    click.echo(visible(f"adopted {done.checkpoints} checkpoint(s) of {done.old_workdir}: "
                       f"their history continues at {done.new_workdir}"))


COMMANDS = [prune, clear, clear_legacy, adopt]
