"""One file through time: `rewind log PATH`, `rewind cat REF PATH`, `rewind grep PATTERN`.

(`rewind show REF:PATH` prints a file too; it lives with `show`.)
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

import click

from rewindfs import store as st
from rewindfs.cli.app import App, cli_relative
from rewindfs.cli.commands.complete import complete_reference
from rewindfs.cli.help import examples
from rewindfs.cli.options import (
    PathsAfterDoubleDash,
    dir_option,
    json_option,
    output_options,
    refuse_together,
)
from rewindfs.cli.output import logtable, rowstream
from rewindfs.cli.output.human import human_age, visible
from rewindfs.cli.output.plain import joined
from rewindfs.cli.target import Target, remote_option
from rewindfs.cli.target import resolve as resolve_target
from rewindfs.errors import InvalidInput, NotFound
from rewindfs.sources.stepref import is_step
from rewindfs.store.history import Checkpoint, pathlog, quote_path, search


def _history(app: App, target: Target) -> tuple[object, str, list[Checkpoint]]:
    if not app.store.exists():
        raise NotFound(f"no checkpoints for {target.title}")
    repo, h16 = app.store.repo, target.key
    found = st.checkpoints(repo, h16)
    if not found:
        raise NotFound(f"no checkpoints for {target.title}")
    return repo, h16, found


def ref_name(cp: Checkpoint) -> str:
    """How output names a checkpoint: its number, or the id of an unnumbered one."""
    return str(cp.number) if cp.number else cp.short


@click.command(epilog=examples(
    "rewind log src/app.py          # every checkpoint in which src/app.py changed",
    "rewind log src/                # a directory: changes to anything below it",
    "rewind log 5 README.md         # checkpoint 5 and older only",
    "rewind log --agent kilo app.py # the Kilo Code steps that changed app.py",
    "rewind log kilo:4 app.py       # step kilo:4 and older",
    "rewind log README.md --json",
))
@click.argument("given", nargs=-1, required=True, metavar="[REF] PATH")
@click.option("--agent", type=click.Choice(["kilo", "opencode"]), metavar="kilo|opencode",
              help="That agent's steps instead of our checkpoints.")
@dir_option
@remote_option
@json_option
@output_options
@click.pass_obj
def log(app: App, given: tuple[str, ...], agent: str | None, directory: str | None,
        remote: str | None, as_json: bool) -> None:
    """The checkpoints in which PATH changed, newest first, with lines added and removed.

    With REF, that checkpoint and older ones only (as `git log REF -- PATH`); a
    `kilo:N`/`opencode:N` REF or --agent: that agent's steps that changed PATH.
    """
    if len(given) > 2:
        raise click.UsageError("one PATH (after an optional REF)")
    reference, path = (given[0], given[1]) if len(given) == 2 else (None, given[0])
    target = resolve_target(app, directory, remote)
    workdir = target.workdir
    rel = cli_relative(workdir, path)
    if agent or (reference and is_step(reference)):
        refuse_together(**{"--agent or a kilo:/opencode: step": True, "--remote": remote})
        from rewindfs.cli.commands import agents  # (their readers: only for their steps)

        agents.log_path(app, workdir, agent, reference, rel, as_json)
        return
    repo, h16, found = _history(app, target)
    if reference:
        start = st.resolve(repo, h16, reference)
        found = found[[cp.id for cp in found].index(start.id):] \
            if start.id in {cp.id for cp in found} else [start]
    changes = pathlog.log(repo, found, rel)
    if not changes and not pathlog.ever_existed(repo, found, rel):
        raise NotFound(f"{path!r} is in no checkpoint of {target.title}")
    if as_json:
        click.echo(json.dumps([{
            "number": c.checkpoint.number or None, "hash": c.checkpoint.id,
            "short_hash": c.checkpoint.short, "timestamp": c.checkpoint.timestamp,
            "reason": c.checkpoint.reason, "pre_rollback": c.checkpoint.pre_rollback,
            "status": c.status, "insertions": c.added, "deletions": c.deleted,
            "binary": c.binary} for c in changes], indent=2))
        return
    with app.term.paged() as console:
        if not changes:
            console.print(f"{quote_path(rel)} did not change in any checkpoint", soft_wrap=True)
            return
        now = time.time()
        logtable.print_log(app.term, console, f"{quote_path(rel)} in {target.title}:",
                           [_log_row(c, now) for c in changes])


def _log_row(change: pathlog.PathChange, now: float) -> list[rowstream.Cell]:
    cp = change.checkpoint
    pre = cp.pre_rollback
    return [(("  ", ""), (f"{cp.number}." if cp.number else "-", "dim" if pre else "bold")),
            rowstream.cell(cp.short, "yellow"), rowstream.cell(human_age(cp.time, now), "green"),
            rowstream.cell(change.status),
            logtable.line_counts(change.binary, change.added, change.deleted),
            rowstream.cell(cp.reason, "dim" if pre else "")]


@click.command(epilog=examples(
    "rewind cat 3 src/app.py             # the file as it was in checkpoint 3",
    "rewind cat '2 hours ago' setup.cfg > setup.cfg.old",
    "rewind show 3:src/app.py            # the same, git style",
))
@click.argument("reference", shell_complete=complete_reference)
@click.argument("path", type=click.Path())
@dir_option
@remote_option
@click.pass_obj
def cat(app: App, reference: str, path: str, directory: str | None, remote: str | None) -> None:
    """Print PATH as it was in checkpoint REFERENCE (bytes exactly as stored)."""
    target = resolve_target(app, directory, remote, reference)
    workdir = target.workdir
    if is_step(reference):
        refuse_together(**{"a kilo:/opencode: step": True, "--remote": remote})
        from rewindfs.cli.commands import agents  # (their readers: only for their steps)

        write_bytes(agents.read_step_file(app, workdir, reference,
                                          cli_relative(workdir, path)))
        return
    if not app.store.exists():
        raise NotFound(f"no checkpoints for {target.title}")
    repo, h16 = app.store.repo, target.key
    cp = st.resolve(repo, h16, reference)
    rel = cli_relative(target.workdir, path)
    out = sys.stdout.buffer
    pathlog.copy_file(repo, cp, rel, out.write)  # a big file in pieces, never whole
    out.flush()


def write_bytes(data: bytes) -> None:
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


@click.command(cls=PathsAfterDoubleDash, epilog=examples(
    "rewind grep TODO                  # every checkpoint; each file version searched once",
    "rewind grep -i 'api_key' 3        # only checkpoint 3, ignoring case",
    "rewind grep -l parse_args -- src/ # names of matching files under src/",
))
@click.argument("pattern")
@click.argument("references", nargs=-1, shell_complete=complete_reference)
@dir_option
@remote_option
@click.option("-i", "--ignore-case", is_flag=True, help="Match without regard to case.")
@click.option("-F", "--fixed-strings", is_flag=True, help="PATTERN is a string, not a regex.")
@click.option("-l", "--files-with-matches", "names_only", is_flag=True,
              help="Only the checkpoint and name of each matching file.")
@json_option
@output_options
@click.pass_context
def grep(ctx: click.Context, pattern: str, references: tuple[str, ...], directory: str | None,
         remote: str | None, ignore_case: bool, fixed_strings: bool, names_only: bool,
         as_json: bool) -> None:
    """Search the files of checkpoints (default: all of them) for PATTERN (a Python regex).

    Each match is printed as CHECKPOINT:PATH:LINE:TEXT, where CHECKPOINT is the
    newest checkpoint holding that version of the file: `rewind show
    CHECKPOINT:PATH` prints it. Limit to paths with `-- PATH...`.
    """
    app: App = ctx.obj
    target = resolve_target(app, directory, remote,
                            references[0] if len(references) == 1 else None)
    workdir = target.workdir
    if references:  # those alone: the history is read only as far as they lie
        if not app.store.exists():
            raise NotFound(f"no checkpoints for {target.title}")
        repo, h16 = app.store.repo, target.key
    else:
        repo, h16, found = _history(app, target)
    flags = re.IGNORECASE if ignore_case else 0
    raw = re.escape(pattern) if fixed_strings else pattern
    try:
        compiled = re.compile(os.fsencode(raw), flags)
    except re.error as exc:
        raise InvalidInput(f"invalid pattern {pattern!r}: {exc}") from None
    chosen = [st.resolve(repo, h16, r) for r in references] if references else found
    paths = [cli_relative(workdir, p) for p in ctx.meta.get("paths") or []] or None
    matches = search.grep(repo, chosen, compiled, paths, names_only, h16)
    if as_json:
        click.echo(json.dumps([{
            "number": m.checkpoint.number or None, "hash": m.checkpoint.id,
            "path": os.fsdecode(m.path), "line_number": m.line_number or None,
            "line": m.line.decode("utf-8", "replace") if m.line_number else None}
            for m in matches], indent=2))
        return
    any_match = False
    with app.term.paged() as console:
        for m in matches:
            any_match = True
            head = [(ref_name(m.checkpoint), "yellow"), (":", "cyan"),
                    (quote_path(m.path), "magenta")]
            if names_only:
                console.print(joined(console, *head), soft_wrap=True)
            elif not m.line_number:
                console.print(joined(console, ("binary file ", ""), *head, (" matches", "")),
                              soft_wrap=True)
            else:
                head += [(":", "cyan"), (str(m.line_number), "green"), (":", "cyan")]
                console.print(joined(console, *head, *_highlight(m.line, compiled)),
                              soft_wrap=True)
    if not any_match:
        sys.exit(1)  # as grep: nothing found


def _highlight(line: bytes, pattern: re.Pattern[bytes]) -> list[tuple[str, str]]:
    parts = []
    last = 0
    for found in pattern.finditer(line):
        parts.append((_decode(line[last:found.start()]), ""))
        parts.append((_decode(line[found.start():found.end()]), "bold red"))
        last = found.end()
    parts.append((_decode(line[last:]), ""))
    return parts


def _decode(data: bytes) -> str:
    """A matched line as a terminal may get it: its bytes shown, never obeyed."""
    return visible(data.decode("utf-8", "replace"))


COMMANDS = [log, cat, grep]
