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
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, TypeVar

from rewindfs.cli.output.human import visible
from rewindfs.cli.output.widths import WIDE, env_columns
from rewindfs.cli.output.widths import isatty as _isatty

if TYPE_CHECKING:  # rich is imported by the first output that needs it (cli.output.consoles)
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

T = TypeVar("T")
COLOR_CHOICES = ("auto", "always", "never")
PROGRESS_DELAY = 0.5  # seconds of work before a progress bar appears


def confirm(question: str, *, default: bool = False) -> bool:
    """click.confirm: a wait on a person, which is no stall (cli.watchdog); the question
    (a path, a reason) written out, never obeyed."""
    import click

    from rewindfs.store.objects import liveness

    with liveness.patient():
        return click.confirm(visible(question), default=default)


class _PatientPipe:
    """The pager's stdin: a write waits while the person reads, which is no stall
    (cli.watchdog)."""

    def __init__(self, pipe: IO[str]):
        from rewindfs.store.objects import liveness

        self._pipe = pipe
        self._patient = liveness.patient

    def write(self, text: str) -> int:
        with self._patient():
            return self._pipe.write(text)

    def flush(self) -> None:
        with self._patient():
            self._pipe.flush()

    def __getattr__(self, name: str):
        return getattr(self._pipe, name)


def _popen_pager(command: str, env: dict[str, str]):
    """The pager, started here: its stdin to write into, `wait()` for it to end."""
    import subprocess

    return subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env, text=True,
                            encoding="utf-8", errors="surrogateescape")


# How a pager is started: here, or (in a child of the resident process, whose client has
# the terminal) by the client (resident.clichild.ClientPager).
start_pager = _popen_pager


class Terminal:
    def __init__(self, color: str = "auto", pager: bool = True):
        self.color = color
        self.pager = pager
        self._consoles: dict[int, Console] = {}
        self._progress: Progress | None = None
        self._users = 0

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
        """A console on stdout (or stderr): markup off, so any text prints as it is; off a
        terminal without colour, one that writes text without importing rich
        (cli.output.plain)."""
        stream = sys.stderr if err else sys.stdout
        key = id(stream)
        if key not in self._consoles:
            if not _isatty(stream) and not self.colour_for(stream):
                from rewindfs.cli.output.plain import PlainConsole

                self._consoles[key] = PlainConsole(  # type: ignore[assignment]
                    stream, env_columns() or WIDE, lambda: self._console_on(stream, False))
            else:
                self._consoles[key] = self._console_on(stream, _isatty(stream))
        return self._consoles[key]

    def _console_on(self, stream: IO[str], terminal_width: bool) -> Console:
        from rewindfs.cli.output import consoles

        colour = self.colour_for(stream)
        width = shutil.get_terminal_size().columns if terminal_width else \
            (env_columns() or (80 if colour else WIDE))
        return consoles.Console(file=stream, force_terminal=colour, no_color=not colour,
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
        self._say(f"rewind: note: {visible(message)}", "cyan")

    def warn(self, message: str) -> None:
        """`rewind: warning: ...` on stderr, in yellow on a terminal."""
        self._say(f"rewind: warning: {visible(message)}", "yellow")

    def _say(self, line: str, style: str) -> None:
        console = self.console(err=True)
        if console.no_color and not console.is_terminal:
            console.print(line, soft_wrap=True)  # (plain: rich only if the line needs it)
            return
        from rich.text import Text

        console.print(Text(line, style=style), soft_wrap=True)

    # -- pager -----------------------------------------------------------------------

    @contextmanager
    def paged(self) -> Iterator[Console]:
        """A console whose output goes through the pager when stdout is a terminal."""
        command = self._pager_command()
        if command is None:
            yield self.console()
            return
        from rewindfs.cli.output.consoles import PagerClosed, PagerConsole

        env = dict(os.environ)
        env.setdefault("LESS", "FRX")
        env.setdefault("LV", "-c")
        try:
            proc = start_pager(command, env)
        except OSError:
            yield self.console()
            return
        assert proc.stdin is not None
        # The pager shows what the terminal would: same width, colour as for stdout.
        colour = self.colour_for(sys.stdout)
        pager_console = PagerConsole(file=_PatientPipe(proc.stdin), force_terminal=colour,
                                     no_color=not colour,
                                     color_system="auto" if colour else None,
                                     width=shutil.get_terminal_size().columns, markup=False,
                                     emoji=False, highlight=False, force_interactive=False)
        try:
            yield pager_console
        except (PagerClosed, BrokenPipeError):
            pass  # the person quit the pager early: that is success
        finally:
            try:
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            # As git does: Ctrl-C belongs to the pager while it runs.
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                from rewindfs.store.objects import liveness

                with liveness.patient():
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
        import shlex

        try:
            program = shlex.split(command)[0]
        except (ValueError, IndexError):
            return None
        return command if shutil.which(program) else None

    # -- progress --------------------------------------------------------------------
    # One rich Progress per invocation on stderr; each long operation (capture, restore,
    # a wait on a lock) is a task in it, so nested operations never start a second live
    # display (rich allows one at a time).

    @contextmanager
    def _live(self) -> Iterator[Callable[[], Progress]]:
        self._users += 1
        try:
            yield self._bar
        finally:
            self._users -= 1
            if not self._users and self._progress is not None:
                self._progress.stop()
                self._progress = None

    def _bar(self) -> Progress:
        if self._progress is None:
            from rewindfs.cli.output.bars import progress_bar  # rich.progress: only when shown

            self._progress = progress_bar(self.console(err=True))
            self._progress.start()
        return self._progress

    @contextmanager
    def progress(self, description: str, total: float | None = None, unit: str = "files"
                 ) -> Iterator[Callable[..., None]]:
        """`update(done, total=None, done_bytes=None, total_bytes=None)` drawing a bar with
        totals and rates on a terminal's stderr once the work has taken
        $REWIND_PROGRESS_DELAY seconds (default 0.5); a no-op otherwise (scripts and
        short operations stay quiet)."""
        if not _isatty(sys.stderr):
            yield _ignore
            return
        delay = _progress_delay()
        started = time.monotonic()
        task: list[TaskID] = []

        with self._live() as bar:

            def update(completed: float, total_now: float | None = None,
                       done_bytes: float | None = None, total_bytes: float | None = None
                       ) -> None:
                nonlocal total
                if total_now is not None:
                    total = total_now
                if not task:
                    if time.monotonic() - started < delay:
                        return
                    task.append(bar().add_task(description, total=total, unit=unit))
                fields = {} if done_bytes is None else {"bytes": done_bytes,
                                                        "total_bytes": total_bytes}
                bar().update(task[0], completed=completed, total=total, **fields)

            yield update

    def iterate(self, items: Sequence[T], label: str) -> Iterator[T]:
        """`items` one by one, with a progress bar named `label` (its last word is the unit:
        "removing projects") on a terminal; store.maintenance.progress's protocol."""
        with self.progress(label, total=len(items), unit=label.split()[-1]) as update:
            for done, item in enumerate(items, start=1):
                yield item
                update(done)

    @contextmanager
    def waiting(self, message: str) -> Iterator[None]:
        """Say on a terminal's stderr why nothing happens for a while (a wait on another
        process); a plain line, so it can appear while a progress bar is up."""
        if _isatty(sys.stderr):
            from rich.text import Text

            console = self.console(err=True)
            text = Text(f"rewind: {message}", style="dim")
            if self._progress is not None:
                self._progress.console.print(text, soft_wrap=True)
            else:
                console.print(text, soft_wrap=True)
        yield


def _progress_delay() -> float:
    try:
        return max(0.0, float(os.environ.get("REWIND_PROGRESS_DELAY", PROGRESS_DELAY)))
    except ValueError:
        return PROGRESS_DELAY


def _ignore(*_args: object, **_kwargs: object) -> None:
    return None
