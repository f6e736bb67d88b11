"""How `rewind ui` writes what it shows: timeline rows, file rows, a patch and a file, as
rich Text (never markup: a reason or a path from the store is data, and anything in it a
terminal would act on is escaped)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.text import Text

from rewindfs.cli.output.human import human_bytes, human_span
from rewindfs.cli.output.human import visible as clean  # the one terminal escape
from rewindfs.store.history import quote_path

if TYPE_CHECKING:
    from rewindfs.ui.source import Row

CHANGE_WIDTH = 9
STATUS_MARK = {"created": ("A", "green"), "deleted": ("D", "red"), "modified": ("M", "yellow")}


def age(epoch: float, now: float) -> str:
    return "now" if now - epoch < 1 else human_span(now - epoch)


def number_of(row: Row) -> str:
    cp = row.cp
    return "?" if cp.past_break else str(cp.number) if cp.number else "-"


def change_of(row: Row) -> str:
    if row.size is not None:
        return human_bytes(row.size).replace(" ", "")
    if not row.files:
        return ""
    short = f"+{_compact(row.added)}/-{_compact(row.deleted)}"
    return short if len(short) <= CHANGE_WIDTH else f"{row.files}f"


def _compact(n: int) -> str:
    return str(n) if n < 10_000 else f"{n // 1000}k"


def timeline_row(row: Row, now: float, number_width: int) -> Text:
    """`  12  3m    +4/-1  before: rm -rf build  claude-code [v1]`, a pre-rollback
    snapshot marked and dimmed; one line, cut with an ellipsis where the pane ends."""
    cp = row.cp
    pre = cp.pre_rollback
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    out.append(f"{number_of(row):>{number_width}} ", style="dim" if pre else "bold")
    out.append(f"{age(cp.time, now):>4} ", style="green")
    change = change_of(row)
    out.append(f"{change:>{CHANGE_WIDTH}} ", style="" if row.size is None else "dim")
    if pre:
        out.append("↶ ", style="magenta")
    out.append(clean(cp.reason) or "(no reason)", style="dim italic" if pre else "")
    if row.agent:
        out.append(f"  {clean(row.agent)}", style="magenta")
    for label in cp.labels:
        out.append(f" [{clean(label)}]", style="bold cyan")
    return out


def group_row(group: tuple[str, str, str]) -> Text:
    """The line above an agent turn's checkpoints: `── claude-code · turn 3 · session 1a2b`."""
    agent, session, turn = (clean(part) for part in group)
    parts = [agent or "agent", f"turn {_short(turn, 24)}"]
    if session:
        parts.append(f"session {_short(session, 12)}")
    return Text("── " + " · ".join(parts) + " ──", style="dim", no_wrap=True,
                overflow="ellipsis", end="")


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def file_row(changed) -> Text:
    """`M    +3/-1  src/app.py` (a store.history.fileview.Changed)."""
    mark, style = STATUS_MARK.get(changed.status, ("?", ""))
    if changed.binary:
        counts = "bin"
    elif changed.added is None:
        counts = ""
    else:
        counts = f"+{_compact(changed.added)}/-{_compact(changed.deleted or 0)}"
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    out.append(mark, style=f"bold {style}")
    out.append(f" {counts:>{CHANGE_WIDTH}} ", style="dim")
    out.append(quote_path(changed.path))
    return out


def patch_text(patch: str) -> Text:
    """A patch, coloured as `rewind diff` colours it."""
    out = Text(end="")
    for line in patch.splitlines():
        line = _visible(line)
        if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file",
                            "old mode", "new mode", "Binary files")):
            out.append(line + "\n", style="bold")
        elif line.startswith("@@"):
            out.append(line + "\n", style="cyan")
        elif line.startswith("+"):
            out.append(line + "\n", style="green")
        elif line.startswith("-"):
            out.append(line + "\n", style="red")
        else:
            out.append(line + "\n")
    return out


def _visible(line: str) -> str:
    """A line of a file as text to show: tabs kept, other control characters escaped."""
    return clean(line, tabs=True)


def file_text(path: bytes, content: str):
    """A file's content, syntax-highlighted by its name's lexer (plain when none fits)."""
    from rich.syntax import Syntax

    lines = "\n".join(_visible(line) for line in content.splitlines())
    lexer = Syntax.guess_lexer(os.fsdecode(path), lines) if lines else "text"
    return Syntax(lines, lexer, line_numbers=True, word_wrap=False, theme="ansi_dark",
                  background_color="default")


def summary_text(view, extra: str = "") -> Text:
    """A file shown by its summary (binary, large, missing...)."""
    return Text(view.summary + extra, style="italic")


def cp_name(cp) -> str:
    """`#3`, or the short id of a checkpoint without a number."""
    return f"#{cp.number}" if cp.number else cp.short


def render_view(view, path: bytes):
    """A store.history.fileview.FileView as the diff pane shows it."""
    from rewindfs.store.history import fileview

    if view.kind == fileview.PATCH:
        body = patch_text(view.text)
    elif view.kind == fileview.TEXT:
        body = file_text(path, view.text)
    else:
        return summary_text(view, "; `rewind diff` or the mount show it"
                            if view.kind in (fileview.LARGE, fileview.BINARY) else "")
    if view.cut:
        from rich.console import Group

        return Group(body, Text(f"... {view.cut} more lines", style="italic"))
    return body
