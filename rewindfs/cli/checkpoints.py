"""`rewind checkpoint`, `rewind list`, `rewind diff`."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import click

from rewindfs import store as st
from rewindfs.agent.manager import checkpoint_dict
from rewindfs.cli.app import App
from rewindfs.errors import NotFound
from rewindfs.fs.locate import mounted_checkpoints
from rewindfs.store import capture

PATCH_LINES = 80
dir_option = click.option("-C", "--dir", "directory", type=click.Path(),
                          help="Project directory (default: the project around the cwd).")


@click.command()
@click.argument("directory", required=False, type=click.Path())
@click.option("-m", "--message", "reason", default="manual checkpoint", show_default=True,
              help="Why (the checkpoint's reason).")
@click.option("--label", help="Name the checkpoint (unique per project; never auto-pruned).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def checkpoint(app: App, directory: str | None, reason: str, label: str | None,
               as_json: bool) -> None:
    """Take a checkpoint of DIRECTORY now."""
    workdir = app.project_dir(directory)
    if label:
        st.validate_label(label)
    with _progress_on_terminal():
        result = app.manager.take(str(workdir), reason)
    if label and result.commit:
        st.set_label(app.store, result.project, label, result.commit)
    if as_json:
        click.echo(json.dumps({"taken": result.taken, "hash": result.commit, "label": label,
                               "directory": result.workdir, "skipped_files": result.skipped_files,
                               "adopted_from": result.adopted_from}))
        return
    short = (result.commit or "")[:8]
    if result.adopted_from:
        click.echo(f"{result.adopted_from} was moved here: its history continues")
    if result.taken:
        click.echo(f"checkpoint {short} taken for {result.workdir}: {reason}")
    elif result.commit:
        click.echo(f"no changes since checkpoint {short}; nothing written")
    else:
        click.echo(f"nothing to checkpoint in {result.workdir} (no files)")
    if label and result.commit:
        click.echo(f"labelled {short} as {label!r}")
    for why, paths in result.skipped_files.items():
        what = "over max_file_size_mb" if why == "oversize" else "unreadable"
        click.echo(f"skipped {len(paths)} file(s) {what}: {', '.join(paths[:10])}"
                   + (" ..." if len(paths) > 10 else ""), err=True)


@click.command("list")
@click.argument("directory", required=False, type=click.Path())
@click.option("--all-projects", is_flag=True, help="Every project in the store.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def list_(app: App, directory: str | None, all_projects: bool, as_json: bool) -> None:
    """List checkpoints, newest first (1 = newest)."""
    if all_projects:
        workdirs = [r.workdir for r in st.projects.list_records(app.store.layout)] \
            if app.store.exists() else []
    else:
        workdirs = [app.project_dir(directory)]
    report = []
    for workdir in workdirs:
        h16 = st.project_hash(workdir)
        history = st.checkpoints(app.store.repo, h16) if app.store.exists() else []
        mounted = mounted_checkpoints(app.settings.mount_dir, workdir) if history else {}
        entries = []
        for c in history:
            entry = checkpoint_dict(c, st.stats(app.store.repo, c))
            if c.id in mounted:
                entry["path"] = str(mounted[c.id])
            entries.append(entry)
        report.append((workdir, entries))
    if as_json:
        payload = [{"directory": str(w), "checkpoints": cps} for w, cps in report]
        click.echo(json.dumps(payload if all_projects else payload[0]["checkpoints"], indent=2))
        return
    if not report:
        click.echo("no projects have checkpoints yet")
    for workdir, cps in report:
        click.echo(format_list(str(workdir), cps))


@contextmanager
def _progress_on_terminal() -> Iterator[None]:
    """A running count of files captured, on a terminal only (scripts stay quiet)."""
    if not sys.stderr.isatty():
        yield
        return
    shown = False

    def report(count: int) -> None:
        nonlocal shown
        shown = True
        click.echo(f"\r  capturing: {count} files", nl=False, err=True)

    with capture.reporting_progress(report):
        yield
    if shown:
        click.echo("", err=True)


def format_list(workdir: str, cps: list[dict]) -> str:
    if not cps:
        return f"No checkpoints for {workdir}"
    lines = [f"Checkpoints for {workdir}:"]
    for cp in cps:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(_epoch(cp["timestamp"])))
        files = cp["files_changed"]
        change = (f"  ({files} file{'s' if files != 1 else ''}, "
                  f"+{cp['insertions']}/-{cp['deletions']})") if files else ""
        pinned = "".join(f" [{label}]" for label in cp["labels"])
        lines.append(f"  {cp['number']:>2}. {cp['short_hash']}  {when}  {cp['reason']}"
                     f"{pinned}{change}")
        if "path" in cp:
            lines.append(f"      {cp['path']}")
    return "\n".join(lines)


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


@click.command()
@click.argument("old")
@click.argument("new", required=False)
@dir_option
@click.option("--stat", "mode", flag_value="stat", help="Only the summary of changed files.")
@click.option("--name-only", "mode", flag_value="names", help="Only the names of changed files.")
@click.option("--full", is_flag=True, help=f"The whole patch (default: first {PATCH_LINES} lines).")
@click.pass_obj
def diff(app: App, old: str, new: str | None, directory: str | None, mode: str | None,
         full: bool) -> None:
    """Changes since checkpoint OLD (to the working tree, or to checkpoint NEW)."""
    workdir = app.project_dir(directory)
    if not app.store.exists():
        raise NotFound(f"no checkpoints for {workdir}")
    repo, h16 = app.store.repo, st.project_hash(workdir)
    base = st.resolve(repo, h16, old)
    if new is None:
        target_tree = st.working_tree_tree(app.store, workdir, app.manager.limits,
                                           app.manager.extra_excludes)
    else:
        target_tree = st.resolve(repo, h16, new).tree_id
    result = st.diff_between(repo, base.tree_id, target_tree)
    if mode == "names":
        for name in result.names:
            click.echo(name)
        return
    if not result.names:
        click.echo("no changes")
        return
    click.echo(result.stat)
    if mode == "stat":
        return
    lines = result.patch.splitlines()
    shown = lines if full else lines[:PATCH_LINES]
    click.echo("")
    click.echo("\n".join(shown))
    if len(shown) < len(lines):
        click.echo(f"... {len(lines) - len(shown)} more lines (use --full)")


COMMANDS = [checkpoint, list_, diff]
