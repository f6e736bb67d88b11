"""docs/cli.md, the command reference: cli.help.commanddoc's walk over the click commands, in
Markdown that reads well on a code host (`scripts/gen_docs` writes it; a test fails when
the committed copy is stale)."""

from __future__ import annotations

import re

import click

from rewindfs.cli.help import commanddoc as doc

# Outside code spans these would turn into emphasis, links or HTML tags (`<h16>` would vanish);
# an underscore inside a word (HERMES_HOME) never does.
_SPECIAL = re.compile(r"([\\*<>\[\]]|(?<!\w)_|_(?!\w))")


def render(group: click.Group) -> str:
    manual = doc.walk(group)
    out = [
        "# rewind command reference",
        "",
        "<!-- Generated from the click commands by scripts/gen_docs; edit the commands' help "
        "in rewindfs/cli/, not this file. -->",
        "",
        f"`rewind` — {_text(manual.title)}",
        "",
        _code_block([doc.SYNOPSIS]),
        "",
        _text(doc.DESCRIPTION),
        "",
        "Every `--help` prints the same text as this page; `man rewind` opens it as a manual "
        "page.",
        "",
        "| command | what it does |",
        "|---|---|",
        *(f"| [`{c.name}`](#rewind-{c.name}) | {_cell(c.summary)} |" for c in manual.commands),
        "",
        "## Checkpoint references",
        "",
        _text(doc.REFERENCES),
        "",
        "## Global options",
        "",
        *_options(manual.options),
        "## Commands",
        "",
    ]
    for command in manual.commands:
        out += [f"### `rewind {command.name}`", "", _code_block(
            [f"rewind {command.name} {command.usage}"]), ""]
        for block in command.blocks:
            out += [_code_block(block.lines) if block.verbatim else _text(block.text), ""]
        out += _options(command.options)
        if command.examples:
            out += ["Examples:", "", _code_block(command.examples), ""]
    out += ["## Exit status", "", "| status | meaning |", "|---|---|"]
    out += [f"| {code} | {_cell(meaning)} |" for code, meaning in doc.EXIT_STATUS]
    out += ["", "## Environment", "", "| variable | meaning |", "|---|---|"]
    out += [f"| `{name}` | {_cell(meaning)} |" for name, meaning in doc.ENVIRONMENT]
    out += ["", "## Files", "", "| path | what it is |", "|---|---|"]
    out += [f"| `{path}` | {_cell(meaning)} |" for path, meaning in doc.FILES]
    out += ["", "## See also", "", ", ".join(doc.SEE_ALSO)]
    return "\n".join(out) + "\n"


def _options(options: list[tuple[str, str]]) -> list[str]:
    if not options:
        return []
    rows = [f"| `{_pipes(flags)}` | {_cell(help_text)} |" for flags, help_text in options]
    return ["| option | meaning |", "|---|---|", *rows, ""]


def _code_block(lines: list[str]) -> str:
    # Help texts indent their examples by two; the fence shows them flush left.
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    text = "\n".join(line[indent:] for line in lines)
    return f"```\n{text}\n```"


def _text(text: str) -> str:
    """Help text as Markdown: backquoted spans stay code, everything else is escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") else _SPECIAL.sub(r"\\\1", part)
                   for part in parts)


def _cell(text: str) -> str:
    """A table cell: a `|` would end it, even inside a code span."""
    return _pipes(_text(text))


def _pipes(text: str) -> str:
    return text.replace("|", r"\|")
