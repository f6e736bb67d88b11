"""The rewind(1) manual page, generated from the click commands so it never drifts.

`scripts/gen_manpage` writes it to man/rewind.1 (committed; a test fails when it is
stale); scripts/setup links it into the venv's share/man/man1, where `man rewind`
finds it when the venv's bin is on PATH (man derives MANPATH from PATH), or with
MANPATH=<venv>/share/man: set.
"""

from __future__ import annotations

import inspect
import re

import click

EXIT_STATUS = [
    ("0", "success"),
    ("1", "an error you can act on: unknown checkpoint, path outside the project, refused or "
          "cancelled operation, incomplete restore; `rewind grep` found nothing"),
    ("2", "bad usage: unknown option, contradictory flags"),
    ("3", "the store is unreadable, corrupt or unwritable"),
    ("4", "busy: another process holds what is needed (a busy mount for `rewind umount`)"),
    ("130", "interrupted"),
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
    ("MANPATH", "Where man looks for this page; see FILES."),
]

REFERENCES = (
    "A checkpoint reference (REF) is a number from `rewind list` (1 = newest; pre-rollback "
    "snapshots are listed with - and not numbered, so restoring never renumbers), latest "
    "(= 1), a label, a full or short (4+ hex digits) id, or a time: `10 minutes ago`, `2h ago`, "
    "`@yesterday-14:00`, `14:00`, `2026-01-05`, `2026-01-05T14:00` (the newest numbered "
    "checkpoint taken at or before it; a day without a time means its end). An id never "
    "changes; numbers move only when a new checkpoint is taken."
)


def render(group: click.Group) -> str:
    ctx = click.Context(group, info_name="rewind", **group.context_settings)
    out = [
        '.TH REWIND 1 "" "rewindfs" "User Commands"',
        ".SH NAME",
        r"rewind \- " + _text(group.help.splitlines()[0].split(": ", 1)[-1]),
        ".SH SYNOPSIS",
        r".B rewind",
        r"[\-\-home DIR] [\-\-color WHEN] [\-\-no\-pager] COMMAND [ARGS]...",
        ".SH DESCRIPTION",
        _text("rewindfs snapshots a working directory into one shared git object store "
              "(compatible with Hermes Agent's ~/.hermes/checkpoints), and lets you list, diff, "
              "search, mount and restore the snapshots. Every restore takes a pre-rollback "
              "snapshot first, so it can itself be undone. Without a directory, a command works "
              "on the project around the current directory; -C DIR names another (a "
              "directory inside a project names that project)."),
        ".SH CHECKPOINT REFERENCES",
        _text(REFERENCES),
        ".SH GLOBAL OPTIONS",
        *_options(ctx, group),
        ".SH COMMANDS",
    ]
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx, **command.context_settings)
        usage = " ".join(command.collect_usage_pieces(sub))
        out += [f".SS {_text('rewind ' + name)} {_text(usage)}", *_paragraphs(command.help or "")]
        options = _options(sub, command)
        if options:
            out += [".PP", "Options:", *options]
        if command.epilog:
            out += _examples(command.epilog)
    out += [".SH EXIT STATUS"]
    for code, meaning in EXIT_STATUS:
        out += [".TP", f".B {code}", _text(meaning)]
    out += [".SH ENVIRONMENT"]
    for name, meaning in ENVIRONMENT:
        out += [".TP", f".B {_text(name)}", _text(meaning)]
    out += [
        ".SH FILES",
        ".TP", r".I $HERMES_HOME/checkpoints/store",
        _text("The shared bare git repository (refs/hermes/<h16> per project)."),
        ".TP", r".I $HERMES_HOME/config.yaml",
        _text("Settings, in the checkpoints: section shared with Hermes."),
        ".TP", r".I <venv>/share/man/man1/rewind.1",
        _text("This page. man finds it when <venv>/bin is on PATH; otherwise "
              "MANPATH=<venv>/share/man: man rewind (the trailing colon keeps the system pages)."),
        ".SH SEE ALSO",
        r".BR git (1),",
        r".BR less (1)",
    ]
    return "\n".join(out) + "\n"


def _options(ctx: click.Context, command: click.Command) -> list[str]:
    lines = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        flags, help_text = record
        if not help_text or (param.name == "help" and command.name != "rewind"
                             and ctx.parent is not None):
            continue
        lines += [".TP", f".B {_text(flags)}", _text(help_text)]
    return lines


def _paragraphs(text: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        if block.startswith("\b"):
            out += _verbatim(block[1:].strip("\n").splitlines())
        else:
            out += [".PP", _text(" ".join(block.split()))]
    return out


def _examples(epilog: str) -> list[str]:
    lines = [line for line in epilog.replace("\b", "").splitlines() if line.strip()]
    if lines and lines[0].strip().rstrip(":") in ("Examples", "Example"):
        lines = lines[1:]
    return [".PP", "Examples:", *_verbatim(lines)]


def _verbatim(lines: list[str]) -> list[str]:
    return [".PP", ".nf", ".RS 4", *(_text(line.rstrip(), keep_lead=True) for line in lines),
            ".RE", ".fi"]


def _text(text: str, keep_lead: bool = False) -> str:
    """Escape for roff: backslashes, dashes, and a leading dot or quote."""
    text = text.replace("\\", r"\e").replace("-", r"\-")
    if not keep_lead:
        text = text.strip()
    if text.startswith((".", "'")):
        text = r"\&" + text
    return text
