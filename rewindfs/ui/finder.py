"""`rewind ui`'s search (`/`): through the whole history, the checkpoints in which a file
whose name holds the words changed (store.history.search.names, as `rewind log` reads
them), then the lines that hold them (store.history.search.grep, as `rewind grep -F -i`);
MAX_HITS at most, streamed in as they are found, on a worker thread."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from rewindfs.ui import text as fmt
from rewindfs.ui.panes import Pane

if TYPE_CHECKING:
    from rewindfs.ui.source import Row, Source

MAX_HITS = 200
BATCH = 20  # hits handed to the screen at a time


@dataclass
class Hit:
    row: Row
    path: bytes
    line: int  # the matching line's number; 0: a file of that name changed there
    text: str = ""

    @property
    def cp(self):
        return self.row.cp


class Finder(ModalScreen["Hit | None"]):
    BINDINGS = [Binding("escape", "cancel", "cancel"),
                Binding("down", "results", "results", show=False)]

    def __init__(self, source: Source):
        super().__init__()
        self.source = source
        self.hits: list[Hit] = []
        self._generation = 0

    def compose(self):
        with Vertical(classes="dialog"):
            yield Static(Text("search file names and text through history", style="bold"),
                         classes="dialog-title")
            yield Input(placeholder="words, then enter (↓ to the results, escape to close)",
                        id="query")
            yield Static("", id="search-status")
            yield Pane(id="search-results")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if not query:
            return
        self._generation += 1
        generation, source = self._generation, self.source
        self.hits = []
        self.query_one("#search-results", Pane).clear_options()
        self._status(f"searching for {query!r}...")

        app: Any = self.app  # ui.app.RewindApp: `stoppable` and `tell` (ui.lifecycle)

        def run() -> None:
            batch: list[Hit] = []
            try:
                with app.stoppable():
                    for hit in _search(source, query):
                        if generation != self._generation or app.quitting.is_set():
                            return
                        batch.append(hit)
                        if len(batch) >= BATCH:
                            app.tell(self._add, generation, batch)
                            batch = []
            except Exception as exc:  # noqa: BLE001 - one line, never a traceback
                app.tell(self._status, f"error: {app.one_line(exc)}")
                return
            app.tell(self._add, generation, batch, True)

        self.run_worker(run, thread=True, group="search")

    def _add(self, generation: int, hits: list[Hit], last: bool = False) -> None:
        if generation != self._generation:
            return
        results = self.query_one("#search-results", Pane)
        start = len(self.hits)
        self.hits += hits
        results.add_options([Option(_hit_text(h), id=str(start + i))
                             for i, h in enumerate(hits)])
        if last:
            count = len(self.hits)
            more = f" (the first {MAX_HITS})" if count >= MAX_HITS else ""
            self._status(f"{count} found{more}; enter shows one" if count else "nothing found")

    def _status(self, line: str) -> None:
        self.query_one("#search-status", Static).update(Text(line, no_wrap=True,
                                                            overflow="ellipsis"))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.hits[int(event.option.id or 0)])

    def action_results(self) -> None:
        results = self.query_one("#search-results", Pane)
        if results.option_count:
            results.focus()
            results.highlighted = results.highlighted or 0

    def action_cancel(self) -> None:
        self._generation += 1
        self.dismiss(None)


def _search(source: Source, query: str) -> Iterator[Hit]:
    """Name hits, then text hits, newest checkpoint first; MAX_HITS at most. The store
    is read under the source's lock one step at a time, so the panes still read."""
    from rewindfs import store as st
    from rewindfs.store.history import search

    with source.lock:
        repo = source.app.store.repo
        history = st.checkpoints(repo, source.key) if source.app.store.exists() else []
    rows: dict[str, Row] = {}

    def row(cp) -> Row:
        if cp.id not in rows:
            with source.lock:
                rows[cp.id] = source._row(repo, cp)
        return rows[cp.id]

    found = 0
    pattern = re.compile(re.escape(query.encode()), re.IGNORECASE)
    for hits in (_locked(source, search.names(repo, history, query)),
                 _locked(source, search.grep(repo, history, pattern))):
        for match in hits:
            line = getattr(match, "line_number", 0)
            words = match.line.decode("utf-8", "replace").strip() if line else \
                ("deleted" if getattr(match, "deleted", False) else "changed")
            yield Hit(row(match.checkpoint), match.path, line, words)
            found += 1
            if found >= MAX_HITS:
                return


def _locked(source: Source, items: Iterator) -> Iterator:
    while True:
        with source.lock:
            item = next(items, None)
        if item is None:
            return
        yield item


def _hit_text(hit: Hit) -> Text:
    cp = hit.cp
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    out.append(f"{cp.number if cp.number else cp.short:>5} ", style="bold")
    out.append(fmt.quote_path(hit.path), style="magenta")
    if hit.line:
        out.append(f":{hit.line}: ", style="green")
        out.append(fmt.clean(hit.text[:200]))
    else:
        out.append(f"  ({hit.text} here)", style="dim")
    return out
