"""`rewind ui` kept true while it stays open: new checkpoints (an agent still running)
appear, the ages move on with the clock, and the files pane follows the working tree
(what a restore would change now, not when the checkpoint was selected), its selection
kept. A mixin of ui.app.RewindApp; every look runs on a worker (ui.app's `background`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewindfs.ui.source import Row

FILES_EVERY = 5  # live ticks between two readings of the files pane (5 s by default)


class Live:
    """The live refresh of ui.app.RewindApp."""

    source: Any
    quitting: Any  # threading.Event (ui.lifecycle)
    tip: str | None
    clock: Callable[[], float]
    timeline: Any
    files_pane: Any
    background: Callable[..., None]
    say: Callable[..., None]
    load_diff: Callable[[], None]
    _show_first: Callable[..., None]

    def start_live(self) -> None:
        """In the app's __init__."""
        self._reloading = False
        self._ticks = 0
        self._live_error: str | None = None  # what the last look for checkpoints met

    def check_live(self) -> None:
        """Each tick: new checkpoints, the ages, and now and then the files pane."""
        from textual.css.query import NoMatches

        if self.quitting.is_set():
            return  # (a tick queued before the app began to end)
        try:
            self.timeline.refresh_ages(self.clock())
        except NoMatches:
            return  # the screen is being taken down (the app ends)
        source = self.source
        self._ticks += 1
        if self._ticks % FILES_EVERY == 0:
            self.refresh_files()

        def done(tip: str | None) -> None:
            self._live_error = None
            if source is self.source and tip != self.tip and not self._reloading:
                self.reload(f"new checkpoint {tip[:8]}" if tip else "history changed")

        def failed(line: str) -> None:  # said once, not at every tick
            if line != self._live_error:
                self._live_error = line
                self.say(f"cannot look for new checkpoints: {line}", error=True)

        self.background("live", source.tip, done, failed)

    def refresh_files(self) -> None:
        """The files pane read again when it compares with the working tree: shown anew
        when anything differs, the selected file kept (its diff read again if it
        changed)."""
        files, row = self.files_pane.files, self.timeline.selected
        if files is None or not files.live or row is None or row.cp.id != files.cp.id:
            return
        source, step, cp = self.source, files.step, files.cp

        def done(fresh) -> None:
            if self.files_pane.files is not files or fresh.new_tree == files.new_tree:
                return  # moved on meanwhile, or nothing changed
            chosen = self.files_pane.selected
            self.files_pane.show(fresh, keep=chosen.path if chosen else None)
            now = self.files_pane.selected
            if now is not None and now != chosen:
                self.load_diff()

        def failed(line: str) -> None:
            if self.files_pane.files is files:  # what it lists may be true no longer
                self.files_pane.show_error(line)

        self.background("files", lambda: source.files(cp, step, None), done, failed)

    def reload(self, why: str = "", keep: str | None = None, error: bool = False) -> None:
        """Read the history again (after an action, or when it changed), the selection kept."""
        source = self.source
        selected = self.timeline.selected
        keep = keep or (selected.cp.id if selected else None)

        self._reloading = True

        def work() -> list[Row]:
            rows = source.open()
            if rows and source.target.workdir.is_dir():
                source.working_tree(fresh=True)  # what the files pane compares with
            return rows

        def done(rows: list[Row]) -> None:
            self._reloading = False
            self.tip = rows[0].cp.id if rows else None
            self._show_first(rows, None, keep)
            if why:
                self.say(why, error=error)

        def failed(line: str) -> None:
            self._reloading = False
            self.tip = None
            self._show_first([], line)

        self.background("reload", work, done, failed)
