"""Output off a terminal without colour, without importing rich: text is written as it is,
exactly as rich's console writes it there (no markup, emoji or highlighting, nothing wider
than the width to wrap), and anything else (a rich renderable, text with characters rich
would change, a line longer than the width) goes to rich's console, made on first need.
rich's import is a third of a `rewind` command's start-up; a script reading its output
should not pay for colour it never sees."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class PlainConsole:
    is_terminal = False
    no_color = True

    def __init__(self, file: IO[str], width: int, rich: Callable[[], Console]):
        self.file, self.width = file, width
        self._make_rich, self._rich = rich, None

    def rich(self) -> Console:
        if self._rich is None:
            self._rich = self._make_rich()
        return self._rich

    def print(self, *objects: Any, style: str | None = None, soft_wrap: bool | None = None,
              end: str = "\n", **options: Any) -> None:
        text = objects[0] if len(objects) == 1 else None
        if isinstance(text, str) and not options and end == "\n" and _as_is(text) and (
                soft_wrap or all(len(line) <= self.width for line in text.split("\n"))):
            self.file.write(text + end)
        else:
            self.rich().print(*objects, style=style, soft_wrap=soft_wrap, end=end, **options)

    def on_broken_pipe(self) -> None:
        """As cli.output.consoles.Console: the caller decides what a closed pipe means."""
        if self._rich is not None:
            self._rich.quiet = True
        raise BrokenPipeError

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich(), name)


def _as_is(text: str) -> bool:
    """Whether rich writes `text` unchanged and fits it as its length says: printable
    (rich strips control codes) and ASCII (a wide character takes two cells: rich's to
    measure)."""
    return all(line.isprintable() for line in text.split("\n")) and text.isascii()


def styled(console: Any, text: str, style: str = "") -> Any:
    """`text` in `style`, to print on `console`: the string itself for a PlainConsole
    (no colour to show: written without rich), else a rich Text."""
    if isinstance(console, PlainConsole):
        return text
    from rich.text import Text

    return Text(text, style=style)


def joined(console: Any, *parts: tuple[str, str]) -> Any:
    """Pieces of text, each in its style, as one: see `styled`."""
    if isinstance(console, PlainConsole):
        return "".join(text for text, _ in parts)
    from rich.text import Text

    out = Text()
    for text, style in parts:
        out.append(text, style=style)
    return out
