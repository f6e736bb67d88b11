"""`rewind ui`'s three panes: the timeline, the files of the selected checkpoint, and the
selected file's diff (or the file as it was). Each pane is told what to show; it reads
nothing itself (ui.app's workers read, ui.source says how)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from rewindfs.ui import text

if TYPE_CHECKING:
    from rewindfs.ui.source import Files, Row

GROUP = "group:"  # the id prefix of a turn's heading row (not selectable)


class Pane(OptionList):
    """A list moved through with ↓/↑ or j/k (and the mouse)."""

    BINDINGS = [Binding("j", "cursor_down", "down", show=False),
                Binding("k", "cursor_up", "up", show=False)]

    def __init__(self, **kw):
        super().__init__(markup=False, **kw)

    # At either end the cursor stays (an option list would wrap around to the other).
    def action_cursor_up(self) -> None:
        at = self.highlighted
        if at is None or any(not o.disabled for o in self.options[:at]):
            super().action_cursor_up()

    def action_cursor_down(self) -> None:
        at = self.highlighted
        if at is None or any(not o.disabled for o in self.options[at + 1:]):
            super().action_cursor_down()


class Timeline(Vertical):
    """The project's checkpoints, newest first, grouped by agent turn."""

    def __init__(self, **kw):
        super().__init__(classes="pane", **kw)
        self.rows: dict[str, Row] = {}  # checkpoint id -> row
        self.order: list[str] = []  # checkpoint ids, newest first
        self._last_group: tuple[str, str, str] | None = None
        self._groups = 0
        self.now = time.time()
        self.number_width = 3

    def compose(self):
        yield Static("", classes="pane-title", id="timeline-title")
        yield Pane(id="timeline")

    @property
    def list(self) -> Pane:
        return self.query_one("#timeline", Pane)

    def set_title(self, title: str) -> None:
        self.query_one("#timeline-title", Static).update(Text(title, no_wrap=True,
                                                             overflow="ellipsis"))

    def reset(self, rows: list[Row], count: int, now: float, keep: str | None = None) -> None:
        """Show `rows` (the first ones of `count`), the cursor on `keep` when listed."""
        self.now = now
        self.rows, self.order, self._last_group, self._groups = {}, [], None, 0
        self.number_width = max(3, len(str(max([count, *(r.cp.number for r in rows)]))))
        lst = self.list
        lst.clear_options()
        self.append(rows)
        if keep in self.rows:
            self.select(keep)
        elif self.order:
            self.select(self.order[0])

    def append(self, rows: list[Row]) -> None:
        options = []
        for row in rows:
            if row.cp.id in self.rows:
                continue
            group = row.group
            if group != self._last_group and any(group):
                self._groups += 1
                options.append(Option(text.group_row(group), id=f"{GROUP}{self._groups}",
                                       disabled=True))
            self._last_group = group
            self.rows[row.cp.id] = row
            self.order.append(row.cp.id)
            options.append(Option(text.timeline_row(row, self.now, self.number_width),
                                  id=row.cp.id))
        if options:
            self.list.add_options(options)

    def refresh_ages(self, now: float) -> None:
        """Each row's age as of `now` (the rows whose age reads differently redrawn)."""
        before, self.now = self.now, now
        lst = self.list
        for cp_id in self.order:
            row = self.rows[cp_id]
            if text.age(row.cp.time, before) != text.age(row.cp.time, now):
                lst.replace_option_prompt(cp_id, text.timeline_row(row, now,
                                                                   self.number_width))

    def select(self, cp_id: str) -> None:
        lst = self.list
        lst.highlighted = lst.get_option_index(cp_id)
        lst.scroll_to_highlight()

    @property
    def selected(self) -> Row | None:
        option = self.list.highlighted_option
        return None if option is None else self.rows.get(option.id or "")

    def newer_than(self, cp_id: str) -> Row | None:
        """The next newer checkpoint in the chain (None: it is the newest)."""
        at = self.order.index(cp_id)
        return self.rows[self.order[at - 1]] if at > 0 else None

    def show_error(self, message: str) -> None:
        lst = self.list
        lst.clear_options()
        lst.add_option(Option(Text(f"error: {message}", style="bold red"), disabled=True))


class FilesPane(Vertical):
    """The files of the selected checkpoint: what a restore would change, or what its
    step changed."""

    def __init__(self, **kw):
        super().__init__(classes="pane", **kw)
        self.files: Files | None = None

    def compose(self):
        yield Static("files", classes="pane-title", id="files-title")
        yield Pane(id="files")

    @property
    def list(self) -> Pane:
        return self.query_one("#files", Pane)

    def show(self, files: Files, keep: bytes | None = None) -> None:
        """`files`, the first one selected; `keep`: the file selected before (the same
        files read again), selected still when it is listed, without a word to the app
        (its diff is shown already)."""
        self.files = files
        count = len(files.changed)
        self._title(f"{count} file{'s' if count != 1 else ''} {files.title}")
        lst = self.list
        lst.clear_options()
        if not files.changed:
            lst.add_option(Option(Text("no differences", style="italic"), disabled=True))
            return
        lst.add_options([Option(text.file_row(c), id=str(i))
                         for i, c in enumerate(files.changed)])
        at = next((i for i, c in enumerate(files.changed) if c.path == keep), None)
        if at is None:
            lst.highlighted = 0
            return
        with lst.prevent(OptionList.OptionHighlighted):
            lst.highlighted = at
        lst.scroll_to_highlight()

    def waiting(self, what: str) -> None:
        self.files = None
        self._title(what)
        self.list.clear_options()

    def show_error(self, message: str) -> None:
        self.files = None
        self._title("files")
        lst = self.list
        lst.clear_options()
        lst.add_option(Option(Text(f"error: {message}", style="bold red"), disabled=True))

    def _title(self, title: str) -> None:
        self.query_one("#files-title", Static).update(Text(title, no_wrap=True,
                                                          overflow="ellipsis"))

    @property
    def selected(self):
        """The highlighted file (a store.history.fileview.Changed), or None."""
        option = self.list.highlighted_option
        if self.files is None or option is None or option.disabled:
            return None
        return self.files.changed[int(option.id or 0)]


class DiffPane(Vertical):
    """One file's diff, or the file as the checkpoint holds it."""

    def compose(self):
        yield Static("diff", classes="pane-title", id="diff-title")
        with VerticalScroll(id="diff-scroll"):
            yield Static("", id="diff")

    def __init__(self, **kw):
        super().__init__(classes="pane", **kw)

    def show(self, title: str, body) -> None:
        self.query_one("#diff-title", Static).update(Text(title, no_wrap=True,
                                                         overflow="ellipsis"))
        self.query_one("#diff", Static).update(body)
        self.query_one("#diff-scroll", VerticalScroll).scroll_home(animate=False)

    def show_error(self, message: str) -> None:
        self.show("diff", Text(f"error: {message}", style="bold red"))

    def scroll_to_line(self, line: int) -> None:
        self.query_one("#diff-scroll", VerticalScroll).scroll_to(y=max(0, line - 3),
                                                               animate=False)
