"""What a terminal gets that a script does not: colour, a pager, progress bars.

One `Terminal` per invocation (on `App.term`). Colour follows `--color`
(auto/always/never); in auto mode a stream gets colour only when it is a terminal,
`NO_COLOR` is unset or empty and `TERM` is not `dumb`. Long output goes through a
pager as git does it: only when stdout is a terminal and `--no-pager` was not
given; `$REWIND_PAGER`, else `$PAGER`, else `less`, with `LESS=FRX` unless LESS is
set (quit if one screen, keep colours, leave the screen alone). Everything printed
through a console here is plain text when redirected, so scripts see no escapes.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from rewindfs.cli.human import human_bytes

COLOR_CHOICES = ("auto", "always", "never")
WIDE = 10_000  # width when not a terminal: tables never wrap or cut a script's lines


class Terminal:
    def __init__(self, color: str = "auto", pager: bool = True):
        self.color = color
        self.pager = pager
        self._consoles: dict[int, Console] = {}

    # -- colour ----------------------------------------------------------------------

    def colour_for(self, stream: IO[str]) -> bool:
        if self.color == "always":
            return True
        if self.color == "never" or os.environ.get("NO_COLOR", ""):
            return False
        if os.environ.get("TERM") == "dumb":
            return False
        return _isatty(stream)

    def console(self, err: bool = False) -> Console:
        """A console on stdout (or stderr): markup off, so any text prints as it is."""
        stream = sys.stderr if err else sys.stdout
        key = id(stream)
        if key not in self._consoles:
            self._consoles[key] = self._console_on(stream, _isatty(stream))
        return self._consoles[key]

    def _console_on(self, stream: IO[str], terminal_width: bool) -> Console:
        colour = self.colour_for(stream)
        width = shutil.get_terminal_size().columns if terminal_width else \
            (_env_columns() or (80 if colour else WIDE))
        return Console(file=stream, force_terminal=colour, no_color=not colour,
                       color_system="auto" if colour else None, width=width,
                       markup=False, emoji=False, highlight=False, soft_wrap=False,
                       force_interactive=False)

    def print_table(self, table: Table, console: Console | None = None) -> None:
        """A rich table; off a terminal without the padding rich leaves at line ends."""
        console = console or self.console()
        if console.is_terminal:
            console.print(table)
            return
        with console.capture() as captured:
            console.print(table)
        console.file.write("".join(line.rstrip() + "\n"
                                   for line in captured.get().splitlines()))

    def note(self, message: str) -> None:
        """`rewind: note: ...` on stderr, in cyan on a terminal."""
        self.console(err=True).print(Text(f"rewind: note: {message}", style="cyan"),
                                     soft_wrap=True)

    def warn(self, message: str) -> None:
        """`rewind: warning: ...` on stderr, in yellow on a terminal."""
        self.console(err=True).print(Text(f"rewind: warning: {message}", style="yellow"),
                                     soft_wrap=True)

    # -- pager -----------------------------------------------------------------------

    @contextmanager
    def paged(self) -> Iterator[Console]:
        """A console whose output goes through the pager when stdout is a terminal."""
        command = self._pager_command()
        if command is None:
            yield self.console()
            return
        env = dict(os.environ)
        env.setdefault("LESS", "FRX")
        env.setdefault("LV", "-c")
        try:
            proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env,
                                    text=True, encoding="utf-8", errors="surrogateescape")
        except OSError:
            yield self.console()
            return
        assert proc.stdin is not None
        # The pager shows what the terminal would: same width, colour as for stdout.
        colour = self.colour_for(sys.stdout)
        pager_console = Console(file=proc.stdin, force_terminal=colour, no_color=not colour,
                                color_system="auto" if colour else None,
                                width=shutil.get_terminal_size().columns, markup=False,
                                emoji=False, highlight=False, force_interactive=False)
        try:
            yield pager_console
        except BrokenPipeError:
            pass  # the person quit the pager early
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
            # As git does: Ctrl-C belongs to the pager while it runs.
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                proc.wait()
            finally:
                signal.signal(signal.SIGINT, previous)

    def _pager_command(self) -> str | None:
        if not self.pager or not _isatty(sys.stdout):
            return None
        for name in ("REWIND_PAGER", "PAGER"):
            if name in os.environ:
                command = os.environ[name].strip()
                break
        else:
            command = "less"
        if not command or command == "cat":
            return None
        try:
            program = shlex.split(command)[0]
        except (ValueError, IndexError):
            return None
        return command if shutil.which(program) else None

    # -- progress --------------------------------------------------------------------

    @contextmanager
    def progress(self, description: str, total: float | None = None, unit: str = "files",
                 delay: float = 0.5) -> Iterator[Callable[..., None]]:
        """`update(completed, total=None, bytes=None)` drawing a bar with totals and rates
        on a terminal's stderr once the work has taken `delay` seconds; a no-op otherwise
        (scripts and short operations stay quiet)."""
        if not _isatty(sys.stderr):
            yield _ignore
            return
        started = time.monotonic()
        state: dict[str, object] = {"bar": None, "task": None}

        def update(completed: float, total_now: float | None = None,
                   done_bytes: float | None = None, total_bytes: float | None = None) -> None:
            nonlocal total
            if total_now is not None:
                total = total_now
            bar = state["bar"]
            if bar is None:
                if time.monotonic() - started < delay:
                    return
                bar = state["bar"] = _progress_bar(self.console(err=True), unit,
                                                   total_bytes is not None)
                bar.start()
                state["task"] = bar.add_task(description, total=total)
            fields = {} if done_bytes is None else {"bytes": done_bytes,
                                                    "total_bytes": total_bytes}
            bar.update(state["task"], completed=completed, total=total, **fields)

        try:
            yield update
        finally:
            if state["bar"] is not None:
                state["bar"].stop()


@contextmanager
def waiting_notice(console: Console, message: str) -> Iterator[None]:
    """A spinner with `message` on a terminal while the block runs (e.g. a lock wait)."""
    if not console.is_terminal:
        yield
        return
    with console.status(message, spinner="dots"):
        yield


class _BytesColumn(ProgressColumn):
    """`12.3/50.0 MB` and its rate, from the task's `bytes`/`total_bytes` fields."""

    def render(self, task: Task) -> Text:
        done = task.fields.get("bytes")
        if done is None:
            return Text("")
        total = task.fields.get("total_bytes")
        elapsed = task.elapsed or 0
        rate = f" {human_bytes(done / elapsed)}/s" if elapsed > 0.2 else ""
        of = f"/{human_bytes(total)}" if total else ""
        return Text(f"{human_bytes(done)}{of}{rate}", style="progress.download")


class _RateColumn(ProgressColumn):
    """Items per second (`1,234 files/s`)."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if not speed:
            return Text("")
        return Text(f"{speed:,.0f} {self.unit}/s", style="progress.data.speed")


def _progress_bar(console: Console, unit: str, with_bytes: bool) -> Progress:
    columns: list[ProgressColumn] = [
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
        TaskProgressColumn(), MofNCompleteColumn(), TextColumn(unit), _RateColumn(unit),
    ]
    if with_bytes:
        columns.append(_BytesColumn())
    columns += [TimeElapsedColumn(), TimeRemainingColumn()]
    return Progress(*columns, console=console, transient=False, refresh_per_second=8)


def _ignore(*_args: object, **_kwargs: object) -> None:
    return None


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _env_columns() -> int | None:
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None

