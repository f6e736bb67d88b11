"""rich's console as rewind prints through it: a closed pipe raises instead of exiting 1
on rich's own terms, so the caller decides (the pager quitting early is success, as in
git). Imported by cli.output.term on the first output that needs rich."""

from __future__ import annotations

from rich.console import Console as RichConsole


class PagerClosed(Exception):
    """The person quit the pager before the output ended (q in less)."""


class Console(RichConsole):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


class PagerConsole(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise PagerClosed
