"""Answers that need no click (its import alone costs more than Python's start-up):
`rewind --version`, and `rewind [COMMAND...] --help` from cli/help/helptexts.txt, the help
click prints, rendered from the commands by scripts/gen_docs and kept as data (a test fails
while it differs from what click prints).

Only for the width those texts were rendered at, which is what click uses whenever the
terminal is 80 columns wide or more, or stdout is no terminal; anything else (a narrower
terminal, another program name, shell completion, more arguments) is click's to answer.
"""

from __future__ import annotations

import os
import sys

PROG = "rewind"
MAX_WIDTH = 80  # click's default max_content_width
HELP_SEP = "\f"  # starts each entry of helptexts.txt (cli.help.helpsource)


def answer(args: list[str], prog_name: str) -> str | None:
    """What `prog_name ARGS` prints and exits 0 with, when known without click; else None."""
    if prog_name != PROG or "_REWIND_COMPLETE" in os.environ:
        return None
    if args == ["--version"]:
        from rewindfs import __version__

        return f"{prog_name}, version {__version__}\n"
    if not args or args[-1] not in ("-h", "--help"):
        return None
    width, texts = help_texts()
    found = texts.get(tuple(args[:-1]))
    if found is None or args[-1] not in found[0] or help_width() != width:
        return None
    return found[1]


def help_texts() -> tuple[int, dict[tuple[str, ...], tuple[list[str], str]]]:
    """(the width they were rendered at, {command path: (help option names, text)})."""
    with open(os.path.join(os.path.dirname(__file__), "help", "helptexts.txt"),
              encoding="utf-8") as fh:
        first, *entries = fh.read().split(HELP_SEP)
    out = {}
    for entry in entries:
        head, _, text = entry.partition("\n")
        path, _, flags = head.partition("\t")
        out[tuple(path.split())] = (flags.split(), text)
    return int(first.split()[1]), out


def help_width() -> int:
    """The width click wraps help at: the terminal's columns (shutil.get_terminal_size's
    rules: $COLUMNS, else stdout's terminal, else 80) capped at 80, minus 2."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return max(min(columns, MAX_WIDTH) - 2, 50)


def write(data: str) -> int:
    """Print a quick answer; the exit status (141, quietly, when the reader went away:
    `rewind --help | head -1`, as cli.failure ends a command then)."""
    try:
        sys.stdout.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        null = os.open(os.devnull, os.O_WRONLY)  # the interpreter's last flush stays quiet
        os.dup2(null, 1)
        os.close(null)
        return 141
    return 0
