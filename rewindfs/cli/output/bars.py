"""The progress bar's columns (imported only when a bar is shown: rich.progress is slow to
import and most commands never need it)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from rewindfs.cli.output.human import human_bytes


class _CountColumn(ProgressColumn):
    """`1,200/3,000 files, 4.2/9.0 MiB` (without totals: `1,200 files`); empty without a unit."""

    def render(self, task: Task) -> Text:
        unit = task.fields.get("unit")
        if not unit:
            return Text("")
        of = f"/{task.total:,.0f}" if task.total is not None else ""
        text = f"{task.completed:,.0f}{of} {unit}"
        done = task.fields.get("bytes")
        if done is not None:
            total = task.fields.get("total_bytes")
            text += f", {human_bytes(done)}" + (f"/{human_bytes(total)}" if total else "")
        return Text(text, style="progress.download")


class _RateColumn(ProgressColumn):
    """`1,755 files/s, 788.0 KiB/s`: averages since the task started."""

    def render(self, task: Task) -> Text:
        unit = task.fields.get("unit")
        elapsed = task.elapsed or 0
        if not unit or elapsed < 0.2:
            return Text("")
        text = f"{task.completed / elapsed:,.0f} {unit}/s"
        done = task.fields.get("bytes")
        if done is not None:
            text += f", {human_bytes(done / elapsed)}/s"
        return Text(text, style="progress.data.speed")


def progress_bar(console: Console) -> Progress:
    def fixed() -> Column:  # one line per column, cut rather than wrapped
        return Column(no_wrap=True, overflow="ellipsis")

    return Progress(
        SpinnerColumn(table_column=fixed()), TextColumn("{task.description}",
                                                        table_column=fixed()),
        BarColumn(bar_width=None), _CountColumn(table_column=fixed()),
        _RateColumn(table_column=fixed()), TimeRemainingColumn(table_column=fixed()),
        console=console, transient=False, refresh_per_second=8, expand=True)
