"""`rewind remote add|remove|list`, `rewind push`, `rewind fetch`."""

from __future__ import annotations

import json
import sys

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option, json_option, refuse_together
from rewindfs.cli.output.human import human_age, visible
from rewindfs.cli.target import fetched as fetched_targets
from rewindfs.store import project_hash
from rewindfs.store.history import checkpoints, projects
from rewindfs.store.remote import catalog, redact, remotes


@click.group("remote", epilog=examples(
    "rewind remote add origin git@example.com:me/checkpoints.git",
    "rewind remote add backup /srv/git/checkpoints.git",
    "rewind remote list",
    "rewind remote remove backup",
))
def remote_group() -> None:
    """Git remotes checkpoints are pushed to and fetched from (any bare repository:
    file, ssh, git or https; credentials come from your ssh agent or git's credential
    helpers, never from a URL)."""


@remote_group.command("add")
@click.argument("name")
@click.argument("url")
@click.pass_obj
def remote_add(app: App, name: str, url: str) -> None:
    """Add remote NAME at URL (nothing is sent until `rewind push NAME`)."""
    remote = remotes.add(app.store, name, url)
    click.echo(f"added remote {remote.name}: {redact(remote.url)}")


@remote_group.command("remove")
@click.argument("name")
@click.pass_obj
def remote_remove(app: App, name: str) -> None:
    """Forget remote NAME and what was fetched from it (the remote itself is not changed)."""
    remote, refs = remotes.remove(app.store, name)
    click.echo(f"removed remote {remote.name} ({redact(remote.url)})"
               + (f" and {refs} fetched ref(s)" if refs else ""))


@remote_group.command("list")
@json_option
@click.pass_obj
def remote_list(app: App, as_json: bool) -> None:
    """The remotes, their last push and fetch, and how many projects each holds."""
    layout = app.store.layout
    held = catalog.remote_projects(app.store.repo, layout) if app.store.exists() else []
    rows = []
    for remote in remotes.every(layout):
        state = remotes.read_state(layout, remote.name)
        rows.append({"name": remote.name, "url": redact(remote.url),
                     "projects": sum(1 for p in held if p.remote == remote.name),
                     "push": state.get("push"), "fetch": state.get("fetch")})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no remotes (`rewind remote add NAME URL` adds one)")
    for row in rows:
        click.echo(visible(f"{row['name']}\t{row['url']}\t{_last('pushed', row['push'])}, "
                           f"{_last('fetched', row['fetch'])}, {row['projects']} project(s)"))


def remote_status(app: App) -> dict[str, list[dict]]:
    """For `rewind status`: each remote, and every project fetched from another machine."""
    layout = app.store.layout
    out: dict[str, list[dict]] = {"remotes": [], "fetched_projects": []}
    for remote in remotes.every(layout):
        state = remotes.read_state(layout, remote.name)
        out["remotes"].append({"name": remote.name, "url": redact(remote.url),
                               "push": state.get("push"), "fetch": state.get("fetch")})
    repo = app.store.repo if app.store.exists() else None
    for target in fetched_targets(app, own=False):
        found = target.fetched
        out["fetched_projects"].append({
            **target.describe(), "checkpoints": len(checkpoints(repo, target.key)),
            "last_touch": found.last_touch or None})
    return out


def remote_lines(held: dict[str, list[dict]], auto_push: str | None) -> list[str]:
    if not held["remotes"]:
        return []
    lines = ["", "Remotes:"]
    for r in held["remotes"]:
        auto = "; pushed after every checkpoint" if r["name"] == auto_push else ""
        lines.append(f"  {r['name']}  {r['url']}  {_last('pushed', r['push'])}, "
                     f"{_last('fetched', r['fetch'])}{auto}")
    if held["fetched_projects"]:
        lines += ["", "Fetched from other machines (rewind list -C NAME):"]
        for p in held["fetched_projects"]:
            lines.append(f"  {p['name']}  {p['directory'] or '?'} on {p['host'] or p['machine']}"
                         f", {p['checkpoints']} checkpoint(s), last {human_age(p['last_touch'])}")
    return [visible(line) for line in lines]  # a remote's words are shown, never obeyed


def _last(verb: str, outcome: dict | None) -> str:
    if not outcome:
        return f"never {verb}"
    if not outcome.get("ok"):
        return f"{verb} {human_age(outcome.get('time'))}: FAILED ({outcome.get('error')})"
    return f"{verb} {human_age(outcome.get('time'))}"


@click.command("push", epilog=examples(
    "rewind push origin                  # this project's new checkpoints",
    "rewind push origin --all-projects   # every project in the store",
    "rewind push origin --prune          # also remove there what is gone here",
))
@click.argument("name")
@dir_option
@click.option("--all-projects", is_flag=True, help="Every project in the store.")
@click.option("--prune", is_flag=True,
              help="Make the remote a mirror: checkpoints, labels and projects gone here "
                   "are removed there too (without it a push never removes anything).")
@json_option
@click.pass_obj
def push_cmd(app: App, name: str, directory: str | None, all_projects: bool, prune: bool,
             as_json: bool) -> None:
    """Push checkpoints, labels, notes and project records to remote NAME.

    Only what the remote lacks is sent, under refs/rewind/m/<this machine>/ there
    (never a branch or tag), so machines sharing a remote never overwrite each other.
    """
    refuse_together(**{"-C": directory, "--all-projects": all_projects})
    h16s = None if all_projects else [project_hash(app.project_dir(directory))]
    from rewindfs.store.remote import push  # (git's push: only this command's)

    report = push(app.store, name, h16s, prune=prune, progress=_progress(as_json),
                  stall=app.settings.remote_timeout)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    layout = app.store.layout
    for h16, count in sorted(report.projects.items()):
        click.echo(visible(f"pushed {count} checkpoint(s) of {_where(layout, h16)} to {name}"))
    for h16 in report.removed:
        click.echo(visible(f"removed {_where(layout, h16)} from {name} (--prune)"))
    if not report.refs:
        click.echo(f"{name} is up to date ({report.url})")
    elif not report.projects and not report.removed:
        click.echo(f"updated labels, notes or project records on {name} ({report.url})")


@click.command("fetch", epilog=examples(
    "rewind fetch origin && rewind list --remote origin",
    "ls ~/.hermes/mnt/@origin/          # while mounted",
))
@click.argument("name")
@json_option
@click.pass_obj
def fetch_cmd(app: App, name: str, as_json: bool) -> None:
    """Fetch every project remote NAME holds (local checkpoints are never touched).

    They show in `rewind list --all-projects`, `rewind list --remote NAME`, the mount
    (@NAME/) and work with diff, show, cat and restore (-C @NAME/PROJECT).
    """
    from rewindfs.store.remote import fetch  # (git's fetch: only this command's)

    report = fetch(app.store, name, progress=_progress(as_json),
                   stall=app.settings.remote_timeout)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    held = {p.key: (n, p) for n, p in
            catalog.names(catalog.remote_projects(app.store.repo, app.store.layout, name))
            .items()}
    click.echo(f"fetched {name} ({report.url}): {len(report.added)} new project(s), "
               f"{len(report.updated)} updated, {len(report.removed)} gone")
    for what, keys in (("new", report.added), ("updated", report.updated)):
        for key in keys:
            if key in held:
                label, project = held[key]
                click.echo(visible(f"  {what:<8} {project.where()}  -C @{name}/{label}"))
    for key in report.removed:
        click.echo(f"  gone     {key}")


def _where(layout, h16: str) -> str:
    record = projects.read_record(layout, h16)
    return str(record.workdir) if record else h16


def _progress(as_json: bool) -> bool:
    return not as_json and sys.stderr.isatty()


COMMANDS = [remote_group, push_cmd, fetch_cmd]
