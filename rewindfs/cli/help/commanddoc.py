"""The manual's content, walked out of the click commands once for every format it is
rendered in: the man page (cli.help.manpage) and the Markdown reference (cli.help.markdown).

Texts no command carries (references, exit status, environment, files) live here too,
so the two renderings cannot drift apart. `scripts/gen_docs` writes both (cli.help.generated);
a test fails while a committed copy is stale.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

import click

SYNOPSIS = "rewind [--home DIR] [--color WHEN] [--no-pager] COMMAND [ARGS]..."

DESCRIPTION = (
    "rewindfs snapshots a working directory into one shared git object store "
    "(compatible with Hermes Agent's ~/.hermes/checkpoints), and lets you list, diff, "
    "search, mount and restore the snapshots. Every restore takes a pre-rollback "
    "snapshot first, so it can itself be undone. Without a directory, a command works "
    "on the project around the current directory; -C DIR names another (a "
    "directory inside a project names that project)."
)

REFERENCES = (
    "A checkpoint reference (REF) is a number from `rewind list` (1 = newest; pre-rollback "
    "snapshots are listed with - and not numbered, so restoring never renumbers), latest "
    "(= 1), a label, a full or short (4+ hex digits) id, or a time: `10 minutes ago`, `2h ago`, "
    "`@yesterday-14:00`, `14:00`, `2026-01-05`, `2026-01-05T14:00` (the newest numbered "
    "checkpoint taken at or before it; a day without a time means its end). An id never "
    "changes; numbers move only when a new checkpoint is taken."
)

EXIT_STATUS = [
    ("0", "success (a `--dry-run --json` reports \"success\": true)"),
    ("1", "an error you can act on: unknown checkpoint, path outside the project, refused or "
          "cancelled operation, incomplete restore, a checkpoint whose tree names a path that "
          "must never be written (such as .. or .git: refused as unsafe input, the rest of the "
          "store still works); `rewind grep` found nothing"),
    ("2", "bad usage: unknown option, contradictory flags"),
    ("3", "the store is unreadable, corrupt or unwritable"),
    ("4", "busy: another process holds what is needed (a busy mount for `rewind umount`)"),
    ("130", "interrupted"),
    ("141", "the reader of the output went away (`rewind list | head -1`): rewind stops "
            "quietly, with the status a shell reports for git in that pipeline"),
]

ENVIRONMENT = [
    ("HERMES_HOME", "The Hermes home holding checkpoints/ and config.yaml (default ~/.hermes)."),
    ("REWIND_<KEY>", "A setting, e.g. REWIND_MAX_SNAPSHOTS=50; REWIND_EXTRA_EXCLUDES takes a "
                     "comma-separated list or a YAML/JSON list. `rewind config` shows each "
                     "setting and its source."),
    ("NO_COLOR", "When set and not empty, no colour (unless --color=always)."),
    ("REWIND_PAGER, PAGER", "The pager for long output (default less); empty or cat: none. "
                            "LESS defaults to FRX, as with git."),
    ("REWIND_PROGRESS_DELAY", "Seconds of work before a progress bar appears (default 0.5)."),
    ("REWIND_STALL_SECONDS", "Seconds a command may make no progress, stuck in one call "
                             "(a damaged store, a hung network filesystem), before it is "
                             "ended with one line and exit status 3; also how long a large "
                             "checkpoint's second process may before the first reads its "
                             "share itself (default 120; 0 turns these watchdogs off; a "
                             "limit under 8 s also checks for progress every eighth of it)."),
    ("REWIND_LOOSE_GUARD", "on or off: force rewindfs's own verified reader of loose objects "
                           "(the default with a stock pygit2, whose libgit2 can hang on a "
                           "truncated one). `rewind status` says which reader is in use."),
    ("MANPATH", "Where man looks for the manual page; see FILES."),
]

FILES = [
    ("$HERMES_HOME/checkpoints/store",
     "The shared bare git repository (refs/hermes/<h16> per project)."),
    ("$HERMES_HOME/config.yaml", "Settings, in the checkpoints: section shared with Hermes."),
    ("<venv>/share/man/man1/rewind.1",
     "The rewind(1) manual page. man finds it when <venv>/bin is on PATH; otherwise "
     "MANPATH=<venv>/share/man: man rewind (the trailing colon keeps the system pages)."),
]

SEE_ALSO = ["git(1)", "less(1)"]


@dataclass(frozen=True)
class Block:
    """A paragraph of help: flowing text, or lines printed as written (click's \\b)."""

    text: str
    verbatim: bool = False

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@dataclass(frozen=True)
class Command:
    name: str
    usage: str                       # "[OPTIONS] REFERENCE [PATHS]..."
    summary: str                     # the first line of its help, as `rewind --help` lists it
    blocks: list[Block]
    options: list[tuple[str, str]]   # (flags, help), as `--help` shows them
    examples: list[str]              # the epilog's lines, without its "Examples:" header


@dataclass(frozen=True)
class Manual:
    title: str                       # the group's one-line help, after "rewindfs: "
    options: list[tuple[str, str]]   # the global options
    commands: list[Command]          # sorted by name; hidden ones left out


def walk(group: click.Group) -> Manual:
    ctx = click.Context(group, info_name="rewind", **group.context_settings)
    commands = []
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx, **command.context_settings)
        commands.append(Command(
            name=name,
            usage=" ".join(command.collect_usage_pieces(sub)),
            summary=command.get_short_help_str(limit=200),
            blocks=_blocks(command.help or ""),
            options=_options(sub, command, with_help=False),
            examples=_examples(command.epilog or ""),
        ))
    title = (group.help or "").splitlines()[0].split(": ", 1)[-1]
    return Manual(title=title, options=_options(ctx, group, with_help=True), commands=commands)


def _options(ctx: click.Context, command: click.Command,
             with_help: bool) -> list[tuple[str, str]]:
    """Documented options; a subcommand's -h/--help is left out (the group's says it once)."""
    help_option = command.get_help_option(ctx)
    out = []
    for param in command.get_params(ctx):
        if param is help_option and not with_help:
            continue
        record = param.get_help_record(ctx)
        if record is not None and record[1]:
            out.append(record)
    return out


def _blocks(text: str) -> list[Block]:
    out = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        if block.startswith("\b"):
            out.append(Block(block[1:].strip("\n"), verbatim=True))
        elif block.strip():
            out.append(Block(" ".join(block.split())))
    return out


def _examples(epilog: str) -> list[str]:
    lines = [line.rstrip() for line in epilog.replace("\b", "").splitlines() if line.strip()]
    if lines and lines[0].strip().rstrip(":") in ("Examples", "Example"):
        lines = lines[1:]
    return lines
