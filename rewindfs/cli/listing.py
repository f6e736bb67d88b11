"""What `rewind list` shows, from either reader of the store: libgit2's (the click command,
cli.checkpoints) or store.history.quickread's (the quick path, cli.quickverbs, which
starts without pygit2). Each checkpoint's row is built once (`row`): cli.rowstream prints
the rows as they stream (rich on a terminal), and off one `plain` joins the same rows'
texts as rowstream does there, without rich (tests hold the two to the same bytes).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewindfs.cli import rowstream
from rewindfs.cli.human import human_age, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from rewindfs.cli.app import App
    from rewindfs.store.history import Checkpoint, Stats

AGENT_TRAILER, TURN_TRAILER = "Rewind-Agent", "Rewind-Turn"
Report = list[tuple[Any, "list[Listed]"]]  # (a cli.target.Target or Local, its rows)


class Local:
    """A local project, as cli.target.Target names one (without that module's imports,
    which the quick path does without)."""

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


def listed(target: Any, found: list[Checkpoint], stats: Callable[[Checkpoint], Stats],
           total_size: Callable[[str, Checkpoint], int], mount: Path | None) -> list[Listed]:
    """`found`, the checkpoints of `target` (a cli.target.Target or Local), as rows; `mount`:
    where a rewindfs mount is (None: none), to say where each checkpoint is in it."""
    from rewindfs.fs.locate import mounted_checkpoints

    mounted = mounted_checkpoints(mount, target.workdir) \
        if found and mount and not target.fetched else {}
    return [Listed(c, stats(c), total_size(target.key, c) if c.root else None,
                   str(mounted[c.id]) if c.id in mounted else None) for c in found]


def entry(line: Listed) -> dict:
    from rewindfs.agent.results import checkpoint_dict

    out = checkpoint_dict(line.cp, line.stats)
    out.pop("time")  # list --json has always left it out (the API's lists have it)
    if line.bytes is not None:
        out["bytes"] = line.bytes
    if line.path is not None:
        out["path"] = line.path
    return out


def as_json(report: Report, many: bool) -> str:
    payload = [{**t.describe(), "checkpoints": [entry(line) for line in lines]}
               for t, lines in report]
    return json.dumps(payload if many else payload[0]["checkpoints"], indent=2)


def heading(title: str, lines: list[Listed]) -> str:
    return f"Checkpoints for {title}:" if lines else f"No checkpoints for {title}"


def print_list(app: App, console: Console, title: str, lines: list[Listed]) -> None:
    """One project's table, streamed (cli.rowstream)."""
    rowstream.print_line(console, heading(title, lines), "bold" if lines else "")
    if not lines:
        return
    justify, texts, row = _table(lines, time.time())
    rowstream.print_rows(app.term, console, justify, texts, row, wrap=3)


def plain(report: Report) -> str | None:
    """The list as print_list prints it off a terminal without colour, joined here without
    rich; None when only rich can lay it out (see rowstream.plain_text)."""
    now = time.time()
    out = []
    for target, lines in report:
        title = heading(target.title, lines)
        if not title.isprintable():
            return None
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
    justify = ["right", "left", "right", "left", "left"] + (["left"] if mounted else [])
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
    reason: rowstream.Cell = ((cp.reason, "dim" if pre else ""),
                              *((f" [{label}]", "cyan") for label in cp.labels))
    agent = cp.trailers.get(AGENT_TRAILER)
    if agent:  # taken by an agent hook (rewindfs.hooks)
        reason += ((f" ({agent}, turn {cp.trailers.get(TURN_TRAILER, '?')})", "magenta"),)
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
