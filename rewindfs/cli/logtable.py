"""How `rewind log` lays out the changes of one path: one row per checkpoint or agent step."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


def log_table() -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    for justify in ("right", "left", "right", "left", "left", "left"):
        table.add_column(justify=justify, no_wrap=True)
    return table


def line_counts(binary: bool, added: int, deleted: int) -> Text:
    counts = Text("binary" if binary else "")
    if not binary:
        counts.append(f"+{added}", style="green")
        counts.append(" ")
        counts.append(f"-{deleted}", style="red")
    return counts
