"""Renders cli/help/helptexts.txt: every `rewind [COMMAND...] --help` as click prints it at
the width it uses on a terminal 80 columns wide or more, kept as data (cli.quick answers
from it without importing click, or even json). Written by scripts/gen_docs
(cli.help.generated); a test fails while it differs from what click prints.

The file: a first line `width W`, then one entry per command, each a line SEP + the
command path (space-separated) + TAB + the help option names (space-separated), then the
text click prints. SEP, a form feed, is in no help text (render checks).
"""

from __future__ import annotations

from collections.abc import Iterator

import click

from rewindfs.cli.quick import HELP_SEP, MAX_WIDTH


def render(group: click.Group) -> str:
    out = [f"width {MAX_WIDTH - 2}\n"]
    for path, flags, text in texts(group):
        if HELP_SEP in text:
            raise ValueError(f"the help of {' '.join(path) or 'rewind'} holds a form feed")
        out.append(f"{HELP_SEP}{' '.join(path)}\t{' '.join(flags)}\n{text}")
    return "".join(out)


def texts(group: click.Group) -> Iterator[tuple[tuple[str, ...], tuple[str, ...], str]]:
    """(command path, help option names, what `--help` prints) for the group and every
    command under it, with contexts built as click builds them when parsing."""
    root = click.Context(group, info_name="rewind", terminal_width=MAX_WIDTH - 2,
                         **group.context_settings)
    yield from _walk(root, ())


def _walk(ctx: click.Context, path: tuple[str, ...]
          ) -> Iterator[tuple[tuple[str, ...], tuple[str, ...], str]]:
    command = ctx.command
    option = command.get_help_option(ctx)
    if option is not None:
        flags = tuple(name for name in (*option.opts, *option.secondary_opts))
        yield path, flags, command.get_help(ctx) + "\n"
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from _walk(click.Context(sub, info_name=name, parent=ctx,
                                               **sub.context_settings), (*path, name))
