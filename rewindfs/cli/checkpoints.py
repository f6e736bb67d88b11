"""`rewind checkpoint`, `rewind list`, `rewind diff`."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.text import Text

from rewindfs import store as st
from rewindfs.agent.results import checkpoint_dict
from rewindfs.cli import agents, rowstream
from rewindfs.cli.app import App
from rewindfs.cli.complete import complete_reference
from rewindfs.cli.feedback import capture_progress
from rewindfs.cli.help import examples
from rewindfs.cli.human import human_age, human_bytes
from rewindfs.cli.options import (
    PathsAfterDoubleDash,
    dir_option,
    dir_option_named,
    json_option,
    output_options,
    refuse_together,
)
from rewindfs.cli.target import Target, remote_option
from rewindfs.cli.target import fetched as fetched_targets
from rewindfs.cli.target import resolve as resolve_target
from rewindfs.errors import NotFound
from rewindfs.fs.locate import mounted_checkpoints, our_mount
from rewindfs.store.capture import secret_files
from rewindfs.store.history import DiffResult, diffstat, projects, quote_path, total_size
from rewindfs.store.history import refuse_taken as refuse_taken_label
from rewindfs.store.objects import refuse_inside_mount
from rewindfs.store.remote import remotes

PATCH_LINES = 80
# How `rewind checkpoint` names each kind of skipped path (SnapshotResult.skipped_files).
SKIPPED = {
    "oversize": "file(s) over max_file_size_mb",
    "unreadable": "unreadable path(s)",
    "changing": "file(s) that kept changing while read (previous version kept)",
    "too_deep": "directory(ies) nested too deep to capture",
}


def _directory(positional: str | None, option: str | None) -> str | None:
    if positional and option and positional != option:
        raise click.UsageError("give the directory once: as DIR or with -C")
    return positional or option


@click.command(epilog=examples(
    "rewind checkpoint                       # the project around the current directory",
    "rewind checkpoint -m 'before refactor'  # with a reason",
    "rewind checkpoint --label v1            # a name you can restore by; never pruned",
    "rewind checkpoint ~/src/app --json",
))
@click.argument("directory", required=False, type=click.Path(), metavar="[DIR]")
@dir_option_named("directory_opt")
@click.option("-m", "--message", "reason", default="manual checkpoint", show_default=True,
              help="Why (the checkpoint's reason).")
@click.option("--label", help="Name the checkpoint (unique per project; never auto-pruned).")
@json_option
@click.pass_obj
def checkpoint(app: App, directory: str | None, reason: str, label: str | None,
               as_json: bool, **kw: str | None) -> None:
    """Take a checkpoint of the project now."""
    given = _directory(directory, kw.get("directory_opt"))
    # A checkpoint in a mount is not a project, whatever project is found above it.
    refuse_inside_mount(given or os.getcwd())
    workdir = app.project_dir(given)
    if label:
        refuse_taken_label(app.store, st.project_hash(workdir), label)
    with capture_progress(app.term, "checkpoint"):
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
        if why == "private_keys":
            app.term.warn(secret_files.warning([quote_path(p) for p in paths]))
            continue
        shown = ", ".join(quote_path(p) for p in paths[:10])
        app.term.warn(f"skipped {len(paths)} {SKIPPED.get(why, why)}: {shown}"
                      + (" ..." if len(paths) > 10 else ""))


@click.command("list", epilog=examples(
    "rewind list                  # this project: number, id, age, reason, changes",
    "rewind list ~/src/app",
    "rewind list --all-projects",
    "rewind list --json | jq '.[0].hash'",
    "rewind list --remote origin  # every project origin holds (after rewind fetch)",
    "rewind list -C @origin/app   # one of them",
    "rewind list --agent kilo     # Kilo Code's steps here; restore with kilo:N",
))
@click.argument("directory", required=False, type=click.Path(), metavar="[DIR]")
@dir_option_named("directory_opt")
@click.option("--all-projects", is_flag=True,
              help="Every project in the store, and those fetched from other machines.")
@remote_option
@click.option("--agent", type=click.Choice(["kilo", "opencode"]), metavar="kilo|opencode",
              help="That agent's own snapshots of the project instead (read-only).")
@json_option
@output_options
@click.pass_obj
def list_(app: App, directory: str | None, all_projects: bool, remote: str | None,
          agent: str | None,
          as_json: bool, **kw: str | None) -> None:
    """List checkpoints, newest first (1 = newest).

    Pre-rollback snapshots (saved by every restore, undo and revert) are listed
    with `-` instead of a number: restoring never renumbers your checkpoints. Use
    their id to restore one. In a history broken by a damaged checkpoint (a warning
    names it), checkpoints found past the break are listed with `?`: use their id or
    label. With --remote NAME alone: every project NAME holds. With --agent, the steps
    Kilo Code or OpenCode took snapshots of, newest first, as `kilo:N` references.
    """
    given = _directory(directory, kw.get("directory_opt"))
    refuse_together(**{"--all-projects": all_projects, "--remote": remote})
    refuse_together(**{"--all-projects": all_projects, "--agent": agent})
    refuse_together(**{"--remote": remote, "--agent": agent})
    if agent:
        agents.list_steps(app, app.project_dir(given), agent, as_json)
        return
    many = all_projects or (remote is not None and not given)
    if all_projects:
        targets = [Target(r.h16, r.workdir) for r in projects.list_records(app.store.layout)] \
            if app.store.exists() else []
        targets += fetched_targets(app, own=False)
    elif many:
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
    report = ((target, _listed(app, target, mount)) for target in targets)
    if as_json:
        payload = [{**t.describe(), "checkpoints": [_entry(line) for line in lines]}
                   for t, lines in report]
        click.echo(json.dumps(payload if many else payload[0]["checkpoints"], indent=2))
        return
    if not targets:
        click.echo(f"{remote} holds no projects (`rewind fetch {remote}` first?)" if remote
                   else "no projects have checkpoints yet")
    with app.term.paged() as console:
        for target, lines in report:  # each project printed as soon as it is read
            _print_list(app, console, target.title, lines)


@dataclass
class _Listed:
    """One checkpoint as `rewind list` shows it."""

    cp: st.Checkpoint
    stats: st.Stats
    bytes: int | None  # a first checkpoint's size
    path: str | None  # where it is mounted


def _listed(app: App, target: Target, mount: Path | None) -> list[_Listed]:
    h16 = target.key
    found = st.checkpoints(app.store.repo, h16) if app.store.exists() else []
    mounted = mounted_checkpoints(mount, target.workdir) \
        if found and mount and not target.fetched else {}
    repo = app.store.repo if found else None
    return [_Listed(c, st.stats(repo, c),
                    total_size(repo, app.store.layout, h16, c) if c.root else None,
                    str(mounted[c.id]) if c.id in mounted else None) for c in found]


def _entry(line: _Listed) -> dict:
    entry = checkpoint_dict(line.cp, line.stats)
    entry.pop("time")  # list --json has always left it out (the API's lists have it)
    if line.bytes is not None:
        entry["bytes"] = line.bytes
    if line.path is not None:
        entry["path"] = line.path
    return entry


def _has_checkpoints(app: App, workdir) -> bool:
    return app.store.exists() and bool(st.checkpoints(app.store.repo, st.project_hash(workdir)))


def _print_list(app: App, console, workdir: str, lines: list[_Listed]) -> None:
    if not lines:
        rowstream.print_line(console, f"No checkpoints for {workdir}")
        return
    rowstream.print_line(console, f"Checkpoints for {workdir}:", "bold")
    mounted = any(line.path is not None for line in lines)
    justify = ["right", "left", "right", "left", "left"] + (["left"] if mounted else [])
    now = time.time()
    # A history broken in the middle: what was found past the break follows one red line.
    shown: list[_Listed | None] = list(lines)
    broken_at = next((i for i, line in enumerate(lines) if line.cp.past_break), None)
    if broken_at is not None:
        shown.insert(broken_at, None)

    def row(i: int) -> list[rowstream.Cell]:
        line = shown[i]
        return _row(line, mounted, now) if line is not None else _break_row(len(justify))

    # Plain texts for every row (what the widths need); styles only for the rows printed.
    texts = [rowstream.texts_of(row(i)) for i in range(len(shown))]
    rowstream.print_rows(app.term, console, justify, texts, row, wrap=3)


def _break_row(columns: int) -> list[rowstream.Cell]:
    note = rowstream.cell("(history broken here: older checkpoints, found past it, "
                          "have no number)", "red")
    return [(), (), (), note, *[()] * (columns - 4)]


def _row(line: _Listed, mounted: bool, now: float) -> list[rowstream.Cell]:
    cp = line.cp
    pre = cp.pre_rollback
    number = "?" if cp.past_break else f"{cp.number}." if cp.number else "-"
    reason: rowstream.Cell = ((cp.reason, "dim" if pre else ""),
                              *((f" [{label}]", "cyan") for label in cp.labels))
    agent = cp.trailers.get("Rewind-Agent")
    if agent:  # taken by an agent hook (rewindfs.hooks)
        reason += ((f" ({agent}, turn {cp.trailers.get('Rewind-Turn', '?')})", "magenta"),)
    row = [(("  ", ""), (number, "dim" if pre else "bold")),
           rowstream.cell(cp.short, "yellow"), rowstream.cell(human_age(cp.time, now), "green"),
           reason, _changes(line)]
    if mounted:
        row.append(rowstream.cell(line.path or "", "dim"))
    return row


def _changes(line: _Listed) -> rowstream.Cell:
    files = line.stats.files_changed
    if not files:
        return ()
    head = f"{files} file{'s' if files != 1 else ''}, "
    if line.bytes is not None:  # the first checkpoint: everything is new, its size says more
        return ((head + human_bytes(line.bytes), ""),)
    return ((head, ""), (f"+{line.stats.insertions}", "green"), ("/", ""),
            (f"-{line.stats.deletions}", "red"))


@click.command(cls=PathsAfterDoubleDash, epilog=examples(
    "rewind diff                      # the newest checkpoint against the working tree",
    "rewind diff 3                    # checkpoint 3 against the working tree",
    "rewind diff 3 1                  # between two checkpoints",
    "rewind diff '10 minutes ago'     # the checkpoint of 10 minutes ago",
    "rewind diff @yesterday-14:00 -- src/app.py",
    "rewind diff 2 --stat",
    "rewind diff 1 --remote origin    # this tree against another machine's newest",
))
@click.argument("refs", nargs=-1, metavar="[OLD [NEW]] [-- PATH...]",
                shell_complete=complete_reference)
@dir_option
@click.option("--stat", is_flag=True, help="Only the summary of changed files (as git's).")
@click.option("--name-only", is_flag=True, help="Only the names of changed files.")
@click.option("--full", is_flag=True,
              help=f"The whole patch when not paging (default: first {PATCH_LINES} lines).")
@remote_option
@output_options
@click.pass_context
def diff(ctx: click.Context, refs: tuple[str, ...], directory: str | None, stat: bool,
         name_only: bool, full: bool, remote: str | None) -> None:
    """Changes since checkpoint OLD (default: the newest), to the working tree or to NEW.

    OLD and NEW are numbers from `rewind list`, ids, labels or times
    (`10 minutes ago`, `@yesterday-14:00`, `2026-01-05T14:00`).
    """
    app: App = ctx.obj
    refuse_together(**{"--stat": stat, "--name-only": name_only})
    if len(refs) > 2:
        raise click.UsageError("at most two checkpoints; put paths after `--`")
    target = resolve_target(app, directory, remote)
    workdir = target.workdir
    paths = _paths(ctx.meta.get("paths"), workdir)
    if any(agents.is_step(r) for r in refs):
        refuse_together(**{"a kilo:/opencode: step": True, "--remote": remote})
        with agents.diff_trees(app, workdir, refs) as (repo, old_tree, new_tree):
            result = st.diff_between(repo, old_tree, new_tree, paths)
    else:
        result = _diff_checkpoints(app, target, refs, paths)
    if name_only:
        for name in result.names:
            click.echo(quote_path(name))
        return
    if not result.files:
        click.echo("no changes")
        return
    with app.term.paged() as console:
        paging = console.file is not sys.stdout
        _print_stat(console, result, _stat_width(console))
        if stat:
            return
        lines = result.patch.splitlines()
        shown = lines if (full or paging) else lines[:PATCH_LINES]
        console.print("")
        for line in shown:
            console.print(_patch_line(line), soft_wrap=True)
        if len(shown) < len(lines):
            console.print(f"... {len(lines) - len(shown)} more lines (use --full)")


def _diff_checkpoints(app: App, target: Target, refs: tuple[str, ...],
                      paths: list[bytes] | None) -> DiffResult:
    workdir = target.workdir
    if not app.store.exists():
        raise NotFound(f"no checkpoints for {workdir}")
    repo, h16 = app.store.repo, target.key
    base = st.resolve(repo, h16, refs[0] if refs else "latest")
    if len(refs) < 2 and not workdir.is_dir():
        raise NotFound(f"{workdir} is not a directory here to compare with: give two "
                       "checkpoints (OLD NEW)")
    if len(refs) < 2:
        with capture_progress(app.term, "reading the working tree"):
            target_tree = st.working_tree_tree(app.store, workdir, app.manager.limits,
                                               app.manager.extra_excludes)
    else:
        target_tree = st.resolve(repo, h16, refs[1]).tree_id
    return st.diff_between(repo, base.tree_id, target_tree, paths)


def _paths(given: list[str] | None, workdir: Path) -> list[bytes] | None:
    if not given:
        return None
    from rewindfs.restore import project_relative

    cwd = Path(os.getcwd())
    base = cwd if cwd == workdir or workdir in cwd.parents else workdir
    return [project_relative(p, workdir, cwd=base) for p in given]


def _stat_width(console) -> int:
    """git's: $COLUMNS, else the terminal's width, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return 80


def _print_stat(console, result: DiffResult, width: int) -> None:
    for row in diffstat.stat_rows(result.files, width):
        text = Text(row.head)
        text.append("+" * row.plus, style="green")
        text.append("-" * row.minus, style="red")
        text.append(row.tail)
        console.print(text, soft_wrap=True)
    console.print(diffstat.summary(result.files), soft_wrap=True)


def _patch_line(line: str) -> Text:
    if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file",
                        "similarity", "rename ", "old mode", "new mode", "Binary files")):
        return Text(line, style="bold")
    if line.startswith("@@"):
        end = line.find("@@", 2)
        text = Text(line[:end + 2], style="cyan")
        text.append(line[end + 2:])
        return text
    if line.startswith("+"):
        return Text(line, style="green")
    if line.startswith("-"):
        return Text(line, style="red")
    return Text(line)


COMMANDS = [checkpoint, list_, diff]
