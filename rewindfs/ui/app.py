"""`rewind ui`: the textual app. The timeline on the left, the selected checkpoint's files
and the selected file's diff beside it; every read runs on a worker thread (ui.source), so
the screen answers keys while a diff or the working tree is read, and a failure shows as
its one line where the answer would have been, never as a traceback.

Keys (a held-out test drives them; ui.dialogs.KEYS lists every one): ↓/↑ and j/k move,
enter opens the checkpoint's files, escape goes back, r restores (g with .git), u undoes, d switches
diff and whole file, / searches, ? shows the keys, q (or ctrl+c) quits; and t, s, l, c, p
(ui.flows). How it stays true while open (ui.live) and how it ends (ui.lifecycle) are
mixins of their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.text import Text
from textual.app import App
from textual.binding import Binding
from textual.containers import Container
from textual.widgets import OptionList, Static

from rewindfs.ui import styles, text
from rewindfs.ui.flows import Flows
from rewindfs.ui.lifecycle import Ending
from rewindfs.ui.live import Live
from rewindfs.ui.panes import DiffPane, FilesPane, Timeline
from rewindfs.ui.source import Row, Source

CHUNK = 200  # rows read at a time once the first screen is up
HINT = "enter files  r restore  u undo  d diff/file  / search  ? keys  q quit"


class RewindApp(Live, Flows, Ending, App):
    CSS = styles.CSS
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("q", "quit", "quit"),
        # Everywhere, dialogs too (textual's own says "press ctrl+q"): ui.lifecycle.
        Binding("ctrl+c", "copy_or_quit", "quit", show=False, priority=True),
        Binding("question_mark", "help", "keys"),
        Binding("escape", "back", "back", show=False),
        Binding("r", "restore", "restore"),
        Binding("g", "restore_git", "restore + .git", show=False),
        Binding("u", "undo", "undo"),
        Binding("d", "toggle_whole", "diff/file"),
        Binding("s", "toggle_step", "since/step"),
        Binding("slash", "search", "search"),
        Binding("t", "revert", "revert turn"),
        Binding("l", "label", "label"),
        Binding("c", "copy_path", "copy path"),
        Binding("p", "projects", "projects"),
    ]

    def __init__(self, source: Source, first: list[Row], *, clock: Callable[[], float] =
                 time.time, live: float | None = 1.0, error: str | None = None):
        """`first`: the newest rows, read before the app starts (they are what the first
        screen shows); `live`: seconds between looks for new checkpoints (None: never);
        `error`: what stopped the first reading, shown in the timeline."""
        super().__init__()
        self.source, self._first, self.clock, self.live = source, first, clock, live
        self._error = error
        self.tip = first[0].cp.id if first else None
        self.step = False  # files: what the step changed (else: since, to the working tree)
        self.whole = False  # diff pane: the whole file as it was (else: the diff)
        self._generation: dict[str, int] = {}
        self._open_files = False  # enter was pressed before the files were read
        self.start_live()
        self.start_ending()
        self._pinned: tuple[Any, bytes, int] | None = None  # (checkpoint, path, line)
        self._painted = False  # the first screen drawn: reading may start at once

    # -- the screen -----------------------------------------------------------------------

    def compose(self):
        yield Static("", id="title")
        with Container(id="main"):
            yield Timeline(id="timeline-pane")
            yield FilesPane(id="files-pane")
            yield DiffPane(id="diff-pane")
        yield Static("", id="status")

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def files_pane(self) -> FilesPane:
        return self.query_one(FilesPane)

    @property
    def diff_pane(self) -> DiffPane:
        return self.query_one(DiffPane)

    def on_mount(self) -> None:
        with self.batch_update():  # one layout and one frame for the first screen
            self.screen.set_class(self.size.width < styles.WIDE, "narrow")
            self._show_first(self._first, self._error)
        self.call_after_refresh(self._first_painted)
        self.timeline.list.focus()
        self.watch_signals()
        if self.live:
            self.set_interval(self.live, self.check_live)

    def _first_painted(self) -> None:
        self._painted = True

    def on_resize(self, event) -> None:
        self.screen.set_class(event.size.width < styles.WIDE, "narrow")

    def _show_first(self, rows: list[Row], error: str | None, keep: str | None = None) -> None:
        self._title()
        if error is not None:
            self.timeline.show_error(error)
            self.files_pane.waiting("files")
            self.say(error, error=True)
            return
        self.timeline.reset(rows, self.source.count, self.clock(), keep)
        self._timeline_title()
        if not rows:
            self.files_pane.waiting("no checkpoints yet")
        self.say(HINT)
        self.load_rest(keep)

    def _title(self) -> None:
        self.query_one("#title", Static).update(Text(
            f"rewind ui  {text.clean(self.source.title)}", no_wrap=True, overflow="ellipsis"))

    def _timeline_title(self) -> None:
        shown, count = len(self.timeline.order), self.source.count
        more = "" if shown >= count else f" ({shown} read)"
        self.timeline.set_title(f"timeline: {count} checkpoint{'s' if count != 1 else ''}"
                                f"{more}, newest first")

    def say(self, message: str, error: bool = False) -> None:
        """One line at the bottom: what just happened, an error, or the keys."""
        status = self.query_one("#status", Static)
        status.set_class(error, "error")
        shown = text.clean(message.replace("\n", " "))
        status.update(Text(f"error: {shown}" if error else shown, no_wrap=True,
                           overflow="ellipsis"))

    # -- reading, on worker threads -----------------------------------------------------

    def background(self, group: str, work: Callable[[], Any], done: Callable[[Any], None],
                   failed: Callable[[str], None], reading: bool = True) -> None:
        """Run `work` on a thread; `done(result)` or `failed(line)` on the screen's thread,
        unless newer work of the same group was started meanwhile. Quitting gives up its
        waits for other processes, and stops it when it is `reading` (ui.lifecycle)."""
        generation = self._generation.get(group, 0) + 1
        self._generation[group] = generation

        def run() -> None:
            from rewindfs.store.objects import locks, notices

            try:
                with self.stoppable(reading), locks.reporting_waits(self._waiting), \
                        notices.listening(self._notice):
                    result = work()
            except Exception as exc:  # noqa: BLE001 - a one-line message, never a traceback
                line = self.one_line(exc)
                self.tell(self._if_current, group, generation, failed, line)
                return
            self.tell(self._if_current, group, generation, done, result)

        if self._painted:
            self.run_worker(run, thread=True, group=group)
        else:  # the first screen is drawn before any reading competes with it for the GIL
            self.call_after_refresh(self.run_worker, run, thread=True, group=group)

    @contextmanager
    def _waiting(self, path, pid: int | None) -> Iterator[None]:
        """Said while another process holds the project (or the store): a worker waits."""
        what = "the store" if path.stem == "store" else "this project"
        who = f"process {pid}" if pid else "another process"
        self.tell(self.say, f"waiting for {who} to finish with {what}...")
        yield

    def _notice(self, message: str) -> None:
        """Damage met on the way that did not stop the reading (a broken history)."""
        self.tell(self.say, f"warning: {message}", True)

    def _if_current(self, group: str, generation: int, then: Callable, value: Any) -> None:
        if self._generation.get(group) == generation:
            then(value)

    def one_line(self, exc: BaseException) -> str:
        from rewindfs.cli.failure import describe

        found = describe(self.source.app, exc)
        return found[0] if found is not None else f"{type(exc).__name__}: {exc}"

    def load_rest(self, keep: str | None = None) -> None:
        """The rest of the timeline, a chunk at a time, after the first screen."""
        source = self.source
        if source.complete:
            return

        def work() -> list[Row]:
            return source.more(CHUNK)

        def done(rows: list[Row]) -> None:
            if source is not self.source:
                return
            self.timeline.append(rows)
            self._timeline_title()
            if keep is not None and keep in self.timeline.rows \
                    and self.timeline.selected is not None \
                    and self.timeline.selected.cp.id != keep:
                self.timeline.select(keep)
            self.load_rest(keep if keep not in self.timeline.rows else None)

        self.background("rows", work, done, lambda line: self.say(line, error=True))

    # -- following the selection ---------------------------------------------------------

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "timeline":
            self.load_files()
        elif event.option_list.id == "files":
            self.load_diff()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "timeline":
            self.open_files()
        elif event.option_list.id == "files":
            self.query_one("#diff-scroll").focus()

    def open_files(self) -> None:
        """Focus moves to the files, the first one selected (once they are read)."""
        files = self.files_pane
        row = self.timeline.selected
        if row is None:
            return
        if files.files is not None and files.files.cp.id == row.cp.id:
            self._focus_files()
        else:  # the keys typed next are the files pane's; its first file once read
            self._open_files = True
            files.list.focus()

    def _focus_files(self) -> None:
        self._open_files = False
        lst = self.files_pane.list
        lst.focus()
        if lst.option_count and not lst.get_option_at_index(0).disabled:
            lst.highlighted = 0

    def load_files(self) -> None:
        row = self.timeline.selected
        if row is None:
            return
        source, step = self.source, self.step
        newer = self.timeline.newer_than(row.cp.id)
        self.files_pane.waiting("reading the files...")

        def done(files) -> None:
            self.files_pane.show(files)
            if self._open_files:
                self._focus_files()
            if not files.changed:
                self.diff_pane.show("diff", Text("nothing differs", style="italic"))

        def failed(line: str) -> None:
            self._open_files = False
            self.files_pane.show_error(line)
            self.diff_pane.show("diff", Text(""))

        self.background("files", lambda: source.files(row.cp, step, newer.cp if newer else None),
                        done, failed)

    def load_diff(self) -> None:
        files = self.files_pane.files
        changed = self.files_pane.selected
        if files is None or changed is None:
            return
        self._pinned = None
        source, whole, path = self.source, self.whole, changed.path
        name = text.quote_path(path)

        def work():
            if whole:
                return f"{name} as {text.cp_name(files.cp)} holds it", \
                    text.render_view(source.file_content(files.cp, path), path)
            return f"{name}: {files.title}", text.render_view(source.file_change(files, path), path)

        self.background("diff", work, lambda found: self.diff_pane.show(*found),
                        self.diff_pane.show_error)

    # -- keys ------------------------------------------------------------------------------

    def action_back(self) -> None:
        focused = self.focused
        if focused is not None and focused.id == "diff-scroll":
            self.files_pane.list.focus()
        elif focused is not None and focused.id == "files":
            self.timeline.list.focus()

    def action_toggle_whole(self) -> None:
        self.whole = not self.whole
        self.say("the whole file as the checkpoint holds it" if self.whole else "the diff")
        self.load_diff()

    def action_toggle_step(self) -> None:
        self.step = not self.step
        self.say("what the checkpoint's step changed" if self.step
                 else "what changed since the checkpoint (what a restore would change)")
        self.load_files()

    def action_help(self) -> None:
        from rewindfs.ui.dialogs import Help

        self.push_screen(Help())
