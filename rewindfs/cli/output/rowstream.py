"""Tables printed as they stream: lined up as one table, written a screenful at a time.

`rewind list` of thousands of checkpoints must show its first screen as soon as one
screen is ready (a pager, `| head`), as `git log` does, and print exactly what it
would print in one go. The column widths come from every row's plain text (cheap);
only the rendering — what costs — happens chunk by chunk, so a reader that stops
early stops the work too. Off a terminal and without colour a row is joined as plain
text, exactly as rich lays out such a table (cells padded to their column, two spaces
between columns, trailing spaces dropped: Terminal.print_table); otherwise each chunk
is a rich table with the widths of the whole. rich is imported only by what needs it
(plain output lays out its rows with `plain_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import IO, TYPE_CHECKING

from rewindfs.cli.output.human import visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from rewindfs.cli.output.term import Terminal

Segment = tuple[str, str]  # text, style ("" for none)
Cell = tuple[Segment, ...]
FIRST_CHUNK = 60  # rows before the first flush: a screen; each next chunk twice the last,
LAST_CHUNK = 1000  # up to this: a reader that stops after a screen costs one more screen
GAP = 2  # spaces between columns


def cell(text: str, style: str = "") -> Cell:
    """One cell of one style; its text shown, never obeyed (cli.output.human.visible)."""
    return ((visible(text), style),)


def print_line(console: Console, text: str, style: str = "") -> None:
    """One line, unwrapped (rich's soft_wrap), written straight off a terminal without colour;
    its text shown, never obeyed (a title naming a project, a path)."""
    text = visible(text)
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


def head_widths(rows: Sequence[Sequence[str]], columns: int) -> list[int]:
    """Each column's width from these rows' plain texts, as rich prints them."""
    return widths_of(_clean(rows)[0], columns)


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


def print_stream(term: Terminal, console: Console, justify: Sequence[str], widths: list[int],
                 rows: Iterable[Sequence[Cell]], *, wrap: int) -> None:
    """Print rows as one table whose widths were decided before every row is made (a long
    list, cli.output.listing: from its first screen and what bounds the rest), each chunk made
    only once the one before is written. A later cell wider than its column wraps there
    (the `wrap` column) or widens it for its chunk (the last column), as rich lays it out."""
    plain = not console.is_terminal and console.no_color
    if not plain:
        widths = _fit(widths, wrap, console.width)
    try:
        for chunk in _chunks(rows, console.file):
            if plain:
                console.file.write(plain_chunk(justify, widths, chunk, wrap))
            else:
                term.print_table(_rich_table(justify, widths, wrap, chunk, grow_last=True),
                                 console)
            console.file.flush()
    except BrokenPipeError:
        console.on_broken_pipe()


def plain_chunks(justify: Sequence[str], widths: list[int], rows: Iterable[Sequence[Cell]],
                 wrap: int) -> Iterator[str]:
    """What print_stream writes off a terminal without colour, a chunk at a time."""
    for chunk in _chunks(rows):
        yield plain_chunk(justify, widths, chunk, wrap)


def plain_chunk(justify: Sequence[str], widths: list[int], rows: Sequence[Sequence[Cell]],
                wrap: int) -> str:
    """Rows laid out with `widths` as rich lays them out off a terminal: joined here when
    every cell fits its column (all but the last) and prints as it is, else by rich."""
    texts = [texts_of(row) for row in rows]
    last = len(widths) - 1
    if all(text.isprintable() and (i == last or width(text) <= widths[i])
           for row in texts for i, text in enumerate(row)):
        return _plain_lines(justify, widths, texts)
    import io

    from rich.console import Console

    from rewindfs.cli.output.widths import WIDE

    console = Console(file=io.StringIO(), width=WIDE, no_color=True, color_system=None,
                      force_terminal=False, markup=False, emoji=False, highlight=False,
                      soft_wrap=False)
    with console.capture() as captured:
        console.print(_rich_table(justify, widths, wrap, rows, grow_last=True))
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def _chunks(rows: Iterable[Sequence[Cell]], out: IO[str] | None = None
            ) -> Iterator[list[Sequence[Cell]]]:
    """`rows` in lists of _chunk_sizes, each made only when it is asked for, and not made
    once `out` is a pipe whose reader is gone (BrokenPipeError, as its write would)."""
    it = iter(rows)
    for at, size in enumerate(_chunk_sizes(None)):
        if at and out is not None and reader_gone(out):
            raise BrokenPipeError
        chunk = list(islice(it, size))
        if not chunk:
            return
        yield chunk


def reader_gone(out: IO[str] | IO[bytes]) -> bool:
    """Whether `out` is a pipe whose reader has gone (a pager quit after its screen, `head`
    done): what is left need not be made, only to fail on its write."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    import select

    poll = select.poll()
    poll.register(fd, 0)  # POLLERR and POLLHUP are reported whatever is asked
    return any(events & select.POLLERR for _, events in poll.poll(0))


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


def _chunk_sizes(rows: int | None) -> Iterable[int]:
    """FIRST_CHUNK, FIRST_CHUNK, then twice the last, up to LAST_CHUNK, until `rows` (None:
    for ever)."""
    done, size = 0, FIRST_CHUNK
    while rows is None or done < rows:
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
                rows: Sequence[Sequence[Cell]], *, grow_last: bool = False) -> Table:
    """`grow_last`: the last column is at least its width, wider when a row needs it."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, GAP, 0, 0))
    last = len(widths) - 1
    for i, (side, width) in enumerate(zip(justify, widths, strict=True)):
        if grow_last and i == last:
            table.add_column(justify=side, no_wrap=True, min_width=width)  # type: ignore[arg-type]
        else:
            table.add_column(justify=side, no_wrap=i != wrap, width=width)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(Text.assemble(*value) for value in row))
    return table
