"""`rewind diff`: two checkpoints, or one and the working tree (captured as a checkpoint
would be, nothing recorded), as git prints a diff."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rewindfs import store as st
from rewindfs.cli.commands.complete import complete_reference
from rewindfs.cli.help import examples
from rewindfs.cli.options import PathsAfterDoubleDash, dir_option, output_options, refuse_together
from rewindfs.cli.output.feedback import capture_progress
from rewindfs.cli.output.human import visible
from rewindfs.cli.output.widths import stat_width
from rewindfs.cli.target import remote_option
from rewindfs.cli.target import resolve as resolve_target
from rewindfs.errors import NotFound

if TYPE_CHECKING:
    from rewindfs.cli.app import App
    from rewindfs.cli.target import Target
    from rewindfs.store.history import DiffResult

PATCH_LINES = 80


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
    from rewindfs.sources.stepref import is_step
    from rewindfs.store.history import quote_path

    app: App = ctx.obj
    refuse_together(**{"--stat": stat, "--name-only": name_only})
    if len(refs) > 2:
        raise click.UsageError("at most two checkpoints; put paths after `--`")
    target = resolve_target(app, directory, remote, refs[0] if refs else None)
    workdir = target.workdir
    paths = _paths(ctx.meta.get("paths"), workdir)
    if any(is_step(r) for r in refs):
        refuse_together(**{"a kilo:/opencode: step": True, "--remote": remote})
        from rewindfs.cli.commands import agents  # (their readers: only for their steps)

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
        _print_stat(console, result, stat_width())
        if stat:
            return
        lines = result.patch.splitlines()
        shown = lines if (full or paging) else lines[:PATCH_LINES]
        console.print("")
        for line in shown:  # a file's lines written out (tabs kept), never obeyed
            console.print(_patch_line(console, visible(line, tabs=True)), soft_wrap=True)
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
            target_tree = st.working_tree_tree(app.store, workdir, app.limits,
                                               app.extra_excludes)
    else:
        newer = st.resolve(repo, h16, refs[1])
        _within_bounds(repo, target, newer)
        target_tree = newer.tree_id
    _within_bounds(repo, target, base)
    return st.diff_between(repo, base.tree_id, target_tree, paths)


def _within_bounds(repo, target: Target, cp) -> None:
    """A fetched checkpoint is compared only within its bounds (store.history.bounds)."""
    if target.fetched is not None:
        from rewindfs.store.history import bounds

        bounds.check(repo, cp.tree_id, f"checkpoint {cp.short} of {target.spec}", "compared")


def _paths(given: list[str] | None, workdir: Path) -> list[bytes] | None:
    from rewindfs.cli.app import cli_relative

    return [cli_relative(workdir, p) for p in given] if given else None


def _print_stat(console, result: DiffResult, width: int) -> None:
    from rewindfs.cli.output.plain import joined
    from rewindfs.store.history import diffstat

    for row in diffstat.stat_rows(result.files, width):
        console.print(joined(console, (row.head, ""), ("+" * row.plus, "green"),
                             ("-" * row.minus, "red"), (row.tail, "")), soft_wrap=True)
    console.print(diffstat.summary(result.files), soft_wrap=True)


def _patch_line(console, line: str):
    from rewindfs.cli.output.plain import joined, styled

    if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file",
                        "similarity", "rename ", "old mode", "new mode", "Binary files")):
        return styled(console, line, "bold")
    if line.startswith("@@"):
        end = line.find("@@", 2)
        return joined(console, (line[:end + 2], "cyan"), (line[end + 2:], ""))
    if line.startswith("+"):
        return styled(console, line, "green")
    if line.startswith("-"):
        return styled(console, line, "red")
    return styled(console, line)


COMMANDS = [diff]
