"""Tables printed as they stream: lined up as one table, written a screenful at a time.

`rewind list` of thousands of checkpoints must show its first screen as soon as one
screen is ready (a pager, `| head`), as `git log` does, and print exactly what it
would print in one go. The column widths come from every row's plain text (cheap);
only the rendering — what costs — happens chunk by chunk, so a reader that stops
early stops the work too. Off a terminal and without colour a row is joined as plain
text, exactly as rich lays out such a table (cells padded to their column, two spaces
between columns, trailing spaces dropped: Terminal.print_table); otherwise each chunk
is a rich table with the widths of the whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.control import strip_control_codes
from rich.table import Table
from rich.text import Text

from rewindfs.cli.term import Terminal

Segment = tuple[str, str]  # text, style ("" for none)
Cell = tuple[Segment, ...]
FIRST_CHUNK = 60  # rows before the first flush: a screen; each next chunk twice the last,
LAST_CHUNK = 1000  # up to this: a reader that stops after a screen costs one more screen
GAP = 2  # spaces between columns


def cell(text: str, style: str = "") -> Cell:
    return ((text, style),)


def plain(value: Cell) -> str:
    return strip_control_codes("".join(text for text, _ in value))


def widths_of(rows: Sequence[Sequence[Cell]], columns: int) -> list[int]:
    """Each column's width: its widest cell."""
    out = [0] * columns
    for row in rows:
        for i, value in enumerate(row):
            width = cell_len(plain(value))
            if width > out[i]:
                out[i] = width
    return out


def print_rows(term: Terminal, console: Console, justify: Sequence[str],
               rows: Sequence[Sequence[Cell]], *, wrap: int | None = None) -> None:
    """Print `rows` as one table (`justify`: "left"/"right" per column; `wrap`: the one
    column that may wrap on a narrow terminal, the others never do)."""
    if not rows:
        return
    widths = widths_of(rows, len(justify))
    plain_text = not console.is_terminal and console.no_color
    if not plain_text:
        widths = _fit(widths, wrap, console.width)
    try:
        for chunk in _chunks(rows):
            if plain_text:
                console.file.write(_plain_lines(justify, widths, chunk))
            else:
                term.print_table(_rich_table(justify, widths, wrap, chunk), console)
            console.file.flush()
    except BrokenPipeError:
        console.on_broken_pipe()


def _fit(widths: list[int], wrap: int | None, width: int) -> list[int]:
    """The widths rich gives the whole table on a narrow terminal: the wrapping column
    gives up what does not fit (rich's own first step; it needs every row to take it)."""
    excess = sum(widths) + GAP * (len(widths) - 1) - width
    if excess <= 0 or wrap is None:
        return widths
    return [max(1, w - excess) if i == wrap else w for i, w in enumerate(widths)]


def _chunks(rows: Sequence[Sequence[Cell]]) -> Iterable[Sequence[Sequence[Cell]]]:
    start, size = 0, FIRST_CHUNK
    while start < len(rows):
        yield rows[start:start + size]
        start += size
        size = min(2 * size if start > FIRST_CHUNK else size, LAST_CHUNK)


def _plain_lines(justify: Sequence[str], widths: list[int], rows: Sequence[Sequence[Cell]]
                 ) -> str:
    lines = []
    gap = " " * GAP
    for row in rows:
        parts = []
        for value, width, side in zip(row, widths, justify, strict=True):
            text = plain(value)
            pad = " " * (width - cell_len(text))
            parts.append(pad + text if side == "right" else text + pad)
        lines.append(gap.join(parts).rstrip() + "\n")
    return "".join(lines)


def _rich_table(justify: Sequence[str], widths: list[int], wrap: int | None,
                rows: Sequence[Sequence[Cell]]) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, GAP, 0, 0))
    for i, (side, width) in enumerate(zip(justify, widths, strict=True)):
        table.add_column(justify=side, no_wrap=i != wrap, width=width)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(Text.assemble(*value) for value in row))
    return table
