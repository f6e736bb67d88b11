"""Tables printed as they stream: lined up as one table, written a screenful at a time.

`rewind list` of thousands of checkpoints must show its first screen as soon as one
screen is ready (a pager, `| head`), as `git log` does, and print exactly what it
would print in one go. The column widths come from every row's plain text (cheap);
only the rendering — what costs — happens chunk by chunk, so a reader that stops
early stops the work too. Off a terminal and without colour a row is joined as plain
text, exactly as rich lays out such a table (cells padded to their column, two spaces
between columns, trailing spaces dropped: Terminal.print_table); otherwise each chunk
is a rich table with the widths of the whole. rich is imported only by what needs it
(the quick `rewind list`, cli.quickverbs, lays out plain ASCII rows with `plain_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from rewindfs.cli.term import Terminal

Segment = tuple[str, str]  # text, style ("" for none)
Cell = tuple[Segment, ...]
FIRST_CHUNK = 60  # rows before the first flush: a screen; each next chunk twice the last,
LAST_CHUNK = 1000  # up to this: a reader that stops after a screen costs one more screen
GAP = 2  # spaces between columns


def cell(text: str, style: str = "") -> Cell:
    return ((text, style),)


def print_line(console: Console, text: str, style: str = "") -> None:
    """One line, unwrapped (rich's soft_wrap), written straight off a terminal without colour."""
    if not console.is_terminal and console.no_color and text.isprintable():
        console.file.write(text + "\n")
    else:
        from rich.text import Text

        console.print(Text(text, style=style), soft_wrap=True)


def texts_of(row: Sequence[Cell]) -> list[str]:
    """A row's plain cell texts."""
    return [value[0][0] if len(value) == 1 else "".join(text for text, _ in value)
            for value in row]


def _clean(rows: Sequence[Sequence[str]]) -> tuple[Sequence[Sequence[str]], bool]:
    """The rows as rich prints their text (control codes but tab and newline removed), and
    whether one holds a tab or newline (which only rich lays out as rich does)."""
    if all(text.isprintable() for row in rows for text in row):
        return rows, False
    from rich.control import strip_control_codes

    out = [[text if text.isprintable() else strip_control_codes(text) for text in row]
           for row in rows]
    return out, any("\t" in text or "\n" in text for row in out for text in row)


def width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def widths_of(rows: Sequence[Sequence[str]], columns: int) -> list[int]:
    """Each column's width: its widest cell (`rows` of plain texts)."""
    out = [0] * columns
    for row in rows:
        for i, text in enumerate(row):
            w = width(text)
            if w > out[i]:
                out[i] = w
    return out


def print_rows(term: Terminal, console: Console, justify: Sequence[str],
               texts: Sequence[Sequence[str]], cells: Callable[[int], Sequence[Cell]], *,
               wrap: int | None = None) -> None:
    """Print rows as one table: `texts` are every row's plain cell texts, `cells(i)` row i
    with its styles (the same texts in segments; asked only of rows printed with rich).
    `justify`: "left"/"right" per column; `wrap`: the one column that may wrap on a
    narrow terminal, the others never do."""
    if not texts:
        return
    texts, odd = _clean(texts)
    widths = widths_of(texts, len(justify))
    plain_text = not console.is_terminal and console.no_color and not odd
    if not plain_text:
        widths = _fit(widths, wrap, console.width)
    try:
        start = 0
        for size in _chunk_sizes(len(texts)):
            end = min(start + size, len(texts))
            if plain_text:
                console.file.write(_plain_lines(justify, widths, texts[start:end]))
            else:
                rows = [cells(i) for i in range(start, end)]
                term.print_table(_rich_table(justify, widths, wrap, rows), console)
            console.file.flush()
            start = end
    except BrokenPipeError:
        console.on_broken_pipe()


def plain_text(justify: Sequence[str], texts: Sequence[Sequence[str]]) -> str | None:
    """What print_rows writes of these rows off a terminal without colour (every row at
    once); None when a cell holds a control character (rich's to clean or lay out)."""
    if not all(text.isprintable() for row in texts for text in row):
        return None
    return _plain_lines(justify, widths_of(texts, len(justify)), texts)


def _fit(widths: list[int], wrap: int | None, width: int) -> list[int]:
    """The widths rich gives the whole table on a narrow terminal: the wrapping column
    gives up what does not fit (rich's own first step; it needs every row to take it)."""
    excess = sum(widths) + GAP * (len(widths) - 1) - width
    if excess <= 0 or wrap is None:
        return widths
    return [max(1, w - excess) if i == wrap else w for i, w in enumerate(widths)]


def _chunk_sizes(rows: int) -> Iterable[int]:
    """FIRST_CHUNK, FIRST_CHUNK, then twice the last, up to LAST_CHUNK, until `rows`."""
    done, size = 0, FIRST_CHUNK
    while done < rows:
        yield size
        done += size
        size = min(2 * size if done > FIRST_CHUNK else size, LAST_CHUNK)


def _plain_lines(justify: Sequence[str], widths: list[int], rows: Sequence[Sequence[str]]
                 ) -> str:
    lines = []
    gap = " " * GAP
    for row in rows:
        parts = []
        for text, w, side in zip(row, widths, justify, strict=True):
            pad = " " * (w - width(text))
            parts.append(pad + text if side == "right" else text + pad)
        lines.append(gap.join(parts).rstrip() + "\n")
    return "".join(lines)


def _rich_table(justify: Sequence[str], widths: list[int], wrap: int | None,
                rows: Sequence[Sequence[Cell]]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, GAP, 0, 0))
    for i, (side, width) in enumerate(zip(justify, widths, strict=True)):
        table.add_column(justify=side, no_wrap=i != wrap, width=width)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(Text.assemble(*value) for value in row))
    return table
