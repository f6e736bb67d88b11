"""The rewind(1) manual page: cli.help.commanddoc's walk over the click commands, in roff.

`scripts/gen_docs` writes it to man/rewind.1 (committed; a test fails when it is
stale); scripts/setup links it into the venv's share/man/man1, where `man rewind`
finds it when the venv's bin is on PATH (man derives MANPATH from PATH), or with
MANPATH=<venv>/share/man: set.
"""

from __future__ import annotations

import click

from rewindfs.cli.help import commanddoc as doc


def render(group: click.Group) -> str:
    manual = doc.walk(group)
    program, arguments = doc.SYNOPSIS.split(" ", 1)
    out = [
        '.TH REWIND 1 "" "rewindfs" "User Commands"',
        ".SH NAME",
        r"rewind \- " + _text(manual.title),
        ".SH SYNOPSIS",
        f".B {program}",
        _text(arguments),
        ".SH DESCRIPTION",
        _text(doc.DESCRIPTION),
        ".SH CHECKPOINT REFERENCES",
        _text(doc.REFERENCES),
        ".SH GLOBAL OPTIONS",
        *_options(manual.options),
        ".SH COMMANDS",
    ]
    for command in manual.commands:
        out.append(f".SS {_text('rewind ' + command.name)} {_text(command.usage)}")
        for block in command.blocks:
            out += _verbatim(block.lines) if block.verbatim else [".PP", _text(block.text)]
        if command.options:
            out += [".PP", "Options:", *_options(command.options)]
        if command.examples:
            out += [".PP", "Examples:", *_verbatim(command.examples)]
    out += [".SH EXIT STATUS"]
    for code, meaning in doc.EXIT_STATUS:
        out += [".TP", f".B {code}", _text(meaning)]
    out += [".SH ENVIRONMENT"]
    for name, meaning in doc.ENVIRONMENT:
        out += [".TP", f".B {_text(name)}", _text(meaning)]
    out += [".SH FILES"]
    for path, meaning in doc.FILES:
        out += [".TP", f".I {_text(path)}", _text(meaning)]
    out += [".SH SEE ALSO"]
    for i, page in enumerate(doc.SEE_ALSO):
        name, section = page.rstrip(")").split("(")
        out.append(f".BR {_text(name)} ({section}){',' if i < len(doc.SEE_ALSO) - 1 else ''}")
    return "\n".join(out) + "\n"


def _options(options: list[tuple[str, str]]) -> list[str]:
    lines = []
    for flags, help_text in options:
        lines += [".TP", f".B {_text(flags)}", _text(help_text)]
    return lines


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
