"""What `rewind list` shows (cli.commands.checkpoints). Each checkpoint's row is built once (`row`):
cli.output.rowstream prints the rows as they stream (rich on a terminal or with colour), and
otherwise `plain` joins the same rows' texts as rowstream does, without importing rich
(tests hold the two to the same bytes).

A list of up to EXACT_ROWS rows is laid out from all of them. A longer one pages as `git
log` does (`Paged`: its rows made as they are printed, store.history.records.listpage), so its
columns are sized from its first screen and what bounds the rest: the number column from
the last number, the age column from the oldest checkpoint's age (at least `23h ago`'s
width), the reason column from the first screen (a longer reason further down wraps in
its column, as rich wraps it on a narrow terminal), the changes column at least as wide
as on the first screen. Still one table; only its widths may differ from what every row
would give.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewindfs.cli.output import rowstream
from rewindfs.cli.output.human import human_age, human_bytes, visible

if TYPE_CHECKING:
    from rich.console import Console

    from rewindfs.cli.app import App
    from rewindfs.store.history import Checkpoint, Page, Stats

AGENT_TRAILER, TURN_TRAILER = "Rewind-Agent", "Rewind-Turn"
Report = list[tuple[Any, "list[Listed]"]]  # (a cli.target.Target or Local, its rows)
EXACT_ROWS = 200  # a list this long or shorter is laid out from all its rows
JUSTIFY = ["right", "left", "right", "left", "left"]
WRAP = 3  # the reason column


class Local:
    """A local project, as cli.target.Target names one (without that module's imports,
    which a plain `rewind list` does without)."""

    fetched = None

    def __init__(self, workdir: Path):
        from rewindfs.store.objects import project_hash

        self.key, self.workdir = project_hash(workdir), workdir

    @property
    def title(self) -> str:
        return str(self.workdir)

    def describe(self) -> dict[str, object]:
        return {"directory": str(self.workdir)}


@dataclass
class Listed:
    """One checkpoint as `rewind list` shows it."""

    cp: Checkpoint
    stats: Stats
    bytes: int | None  # a first checkpoint's size
    path: str | None  # where it is mounted
    over: str | None = None  # a fetched checkpoint over its bounds: why (store.history.bounds)


def listed(target: Any, found: list[Checkpoint], stats: Callable[[Checkpoint], Stats],
           total_size: Callable[[str, Checkpoint], int], mount: Path | None) -> list[Listed]:
    """`found`, the checkpoints of `target` (a cli.target.Target or Local), as rows; `mount`:
    where a rewindfs mount is (None: none), to say where each checkpoint is in it."""
    from rewindfs.fs.locate import mounted_checkpoints

    mounted = mounted_checkpoints(mount, target.workdir) \
        if found and mount and not target.fetched else {}
    return [Listed(c, stats(c), total_size(target.key, c) if c.root else None,
                   str(mounted[c.id]) if c.id in mounted else None) for c in found]


@dataclass
class Paged:
    """A long list's rows, made as they are printed, and what bounds them."""

    count: int
    numbered: int  # the last number
    oldest: int  # the oldest author time
    rows: Iterator[Listed]

    def __len__(self) -> int:
        return self.count


def paged(target: Any, page: Page, stats: Callable[[Checkpoint], Stats],
          total_size: Callable[[str, Checkpoint], int]) -> Paged:
    """A store.history.records.listpage.Page of `target` as rows made as they are read (no mount
    column: a list with one is laid out from all its rows)."""
    rows = (Listed(c, stats(c), total_size(target.key, c) if c.root else None, None)
            for c in page)
    return Paged(page.rows, page.numbered, page.oldest, rows)


def as_paged(lines: list[Listed]) -> Paged | None:
    """A list too long to lay out from all its rows, as one that pages (a broken history
    or a mount column: None, laid out whole)."""
    if len(lines) <= EXACT_ROWS or any(line.path is not None or line.cp.past_break
                                       for line in lines):
        return None
    return Paged(len(lines), max(line.cp.number for line in lines),
                 min(line.cp.time for line in lines), iter(lines))


def cut_short(exc: Exception) -> str:
    """What a long list says when a row past its first screen did not read as its records
    said (damage since; the caller drops the records)."""
    return (f"the history could not be listed past this point ({exc}); "
            "`rewind list` again reads it from the objects")


def entry(line: Listed) -> dict:
    from rewindfs.agent.results import checkpoint_dict

    out = checkpoint_dict(line.cp, line.stats)
    out.pop("time")  # list --json has always left it out (the API's lists have it)
    if line.bytes is not None:
        out["bytes"] = line.bytes
    if line.path is not None:
        out["path"] = line.path
    if line.over is not None:
        out["over_bounds"] = line.over
    return out


def as_json(report: Report, many: bool) -> str:
    payload = [{**t.describe(), "checkpoints": [entry(line) for line in lines]}
               for t, lines in report]
    return json.dumps(payload if many else payload[0]["checkpoints"], indent=2)


def heading(title: str, lines: list[Listed]) -> str:
    title = visible(title)
    return f"Checkpoints for {title}:" if lines else f"No checkpoints for {title}"


def print_list(app: App, console: Console, title: str, lines: list[Listed] | Paged) -> None:
    """One project's table, streamed (cli.output.rowstream)."""
    rowstream.print_line(console, heading(title, lines), "bold" if lines else "")
    if not lines:
        return
    long = lines if isinstance(lines, Paged) else as_paged(lines)
    if long is not None:
        widths, rows = _paged_table(long, time.time())
        rowstream.print_stream(app.term, console, JUSTIFY, widths, rows, wrap=WRAP)
        return
    assert isinstance(lines, list)
    justify, texts, row = _table(lines, time.time())
    rowstream.print_rows(app.term, console, justify, texts, row, wrap=WRAP)
    said = over_line(lines)
    if said:
        rowstream.print_line(console, said, "yellow")


def over_line(lines: list[Listed]) -> str | None:
    """One line for a fetched project whose checkpoints are over the bounds a tree from
    outside must keep (store.history.bounds), naming the newest such one."""
    over = [line for line in lines if line.over is not None]
    if not over:
        return None
    first = over[0]
    which = f"{first.cp.number}" if first.cp.number else first.cp.short
    return (f"  ({len(over)} checkpoint(s) over the bounds for fetched data, not restored, "
            f"searched or compared: checkpoint {which} holds {first.over})")


def plain_paged(title: str, lines: Paged) -> Iterator[str]:
    """What print_list prints of a long list off a terminal without colour, a chunk at a
    time, without rich (unless a row needs it: rowstream.plain_chunk)."""
    yield heading(title, lines) + "\n"
    widths, rows = _paged_table(lines, time.time())
    yield from rowstream.plain_chunks(JUSTIFY, widths, rows, WRAP)


def _paged_table(lines: Paged, now: float) -> tuple[list[int], Iterator[list[rowstream.Cell]]]:
    """The widths of a long list's table (its first screen's, and what bounds the rest)
    and its rows, the first screen's already made."""
    rows = (_row(line, False, now) for line in lines.rows)
    head = list(islice(rows, rowstream.FIRST_CHUNK))
    widths = rowstream.head_widths([rowstream.texts_of(row) for row in head], len(JUSTIFY))
    if lines.numbered:
        widths[0] = max(widths[0], len(f"  {lines.numbered}."))
    oldest = human_age(max(lines.oldest, 1), now)
    widths[2] = max(widths[2], len(oldest), 7 if now - lines.oldest >= 10 else 0)
    return widths, chain(head, rows)


def plain(report: Report) -> str | None:
    """The list as print_list prints it off a terminal without colour, joined here without
    rich; None when only rich can lay it out (see rowstream.plain_text)."""
    now = time.time()
    out = []
    for target, lines in report:
        title = heading(target.title, lines)
        if not title.isprintable():
            return None
        long = as_paged(lines)
        if long is not None:
            out += list(plain_paged(target.title, long))
            continue
        out.append(title + "\n")
        if lines:
            justify, texts, _ = _table(lines, now)
            text = rowstream.plain_text(justify, texts)
            if text is None:
                return None
            out.append(text)
    return "".join(out)


def _table(lines: list[Listed], now: float
           ) -> tuple[list[str], list[list[str]], Callable[[int], list[rowstream.Cell]]]:
    """(each column's justification, every row's plain texts, row i with its styles)."""
    mounted = any(line.path is not None for line in lines)
    justify = JUSTIFY + (["left"] if mounted else [])
    # A history broken in the middle: what was found past the break follows one red line.
    shown: list[Listed | None] = list(lines)
    broken_at = next((i for i, line in enumerate(lines) if line.cp.past_break), None)
    if broken_at is not None:
        shown.insert(broken_at, None)

    def row(i: int) -> list[rowstream.Cell]:
        line = shown[i]
        return _row(line, mounted, now) if line is not None else _break_row(len(justify))

    # Plain texts for every row (what the widths need); styles only for the rows printed.
    return justify, [rowstream.texts_of(row(i)) for i in range(len(shown))], row


def _break_row(columns: int) -> list[rowstream.Cell]:
    note = rowstream.cell("(history broken here: older checkpoints, found past it, "
                          "have no number)", "red")
    return [(), (), (), note, *[()] * (columns - 4)]


def _row(line: Listed, mounted: bool, now: float) -> list[rowstream.Cell]:
    cp = line.cp
    pre = cp.pre_rollback
    number = "?" if cp.past_break else f"{cp.number}." if cp.number else "-"
    # A fetched checkpoint's message is its pusher's: shown, never obeyed (visible).
    reason: rowstream.Cell = ((visible(cp.reason), "dim" if pre else ""),
                              *((f" [{label}]", "cyan") for label in cp.labels))
    agent = cp.trailers.get(AGENT_TRAILER)
    if agent:  # taken by an agent hook (rewindfs.hooks)
        turn = cp.trailers.get(TURN_TRAILER, '?')
        reason += ((visible(f" ({agent}, turn {turn})"), "magenta"),)
    row = [(("  ", ""), (number, "dim" if pre else "bold")),
           rowstream.cell(cp.short, "yellow"), rowstream.cell(human_age(cp.time, now), "green"),
           reason, _changes(line)]
    if mounted:
        row.append(rowstream.cell(line.path or "", "dim"))
    return row


def _changes(line: Listed) -> rowstream.Cell:
    files = line.stats.files_changed
    if not files:
        return ()
    head = f"{files} file{'s' if files != 1 else ''}, "
    if line.bytes is not None:  # the first checkpoint: everything is new, its size says more
        return ((head + human_bytes(line.bytes), ""),)
    return ((head, ""), (f"+{line.stats.insertions}", "green"), ("/", ""),
            (f"-{line.stats.deletions}", "red"))
