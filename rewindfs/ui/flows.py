"""`rewind ui`'s actions as the app runs them: the plan read on a worker, shown with its
question (ui.dialogs.Confirm), carried out on `y` only, then the history read again; and
labelling, copying a checkpoint's mount path, searching, switching projects. A mixin of
ui.app.RewindApp (it uses the app's `background`, `say`, panes and `reload`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text

from rewindfs.ui import actions
from rewindfs.ui import text as fmt

if TYPE_CHECKING:
    from rewindfs.ui.actions import Plan


class Flows:
    """The actions of ui.app.RewindApp."""

    source: Any
    timeline: Any
    files_pane: Any
    diff_pane: Any
    focused: Any
    background: Callable[..., None]
    say: Callable[..., None]
    reload: Callable[..., None]
    push_screen: Callable[..., Any]

    # -- restore, undo, revert: plan, question, then the act -------------------------------

    def action_restore(self) -> None:
        """From the timeline, the whole checkpoint; from the files or the diff, the file."""
        row = self.timeline.selected
        if row is None:
            self.say("no checkpoint selected", error=True)
            return
        focused = getattr(self.focused, "id", None)
        chosen = self.files_pane.selected if focused in ("files", "diff-scroll") else None
        files = self.files_pane.files
        if chosen is not None and files is not None and files.cp.id == row.cp.id:
            path = chosen.path
        elif focused in ("files", "diff-scroll"):
            self.say("no file selected", error=True)
            return
        else:
            path = None
        source = self.source
        self.ask_plan(lambda: actions.restore_plan(source, row.cp, path))

    def action_restore_git(self) -> None:
        """The whole checkpoint and the project's .git as it recorded them."""
        row = self.timeline.selected
        if row is None:
            self.say("no checkpoint selected", error=True)
            return
        source = self.source
        self.ask_plan(lambda: actions.restore_plan(source, row.cp, None, git=True))

    def action_undo(self) -> None:
        source = self.source
        self.ask_plan(lambda: actions.undo_plan(source))

    def action_revert(self) -> None:
        row = self.timeline.selected
        if row is None:
            self.say("no checkpoint selected", error=True)
            return
        source = self.source
        self.ask_plan(lambda: actions.revert_plan(source, row.cp))

    def ask_plan(self, make: Callable[[], Plan]) -> None:
        self.say("planning (a dry run: nothing changes yet)...")
        self.background("action", make, self._ask, lambda line: self.say(line, error=True))

    def _ask(self, plan: Plan) -> None:
        from rewindfs.ui.dialogs import Confirm

        if plan.nothing:
            self.say(f"{plan.title}: nothing to change, the files already match")
            return

        def answered(yes: bool | None) -> None:
            if not yes:
                self.say("nothing changed")
                return
            self.say(f"{plan.title}...")
            self.background("action", plan.run, self._acted,
                            lambda line: self._acted_with_error(line), reading=False)

        self.say(f"{plan.question} y/n")
        self.push_screen(Confirm(plan), answered)

    def _acted(self, lines: list[str]) -> None:
        head = lines[0] if lines else "done"
        self.reload(head, error="failed" in head)

    def _acted_with_error(self, line: str) -> None:
        self.reload(line, error=True)

    # -- label, copy ---------------------------------------------------------------------

    def action_label(self) -> None:
        from rewindfs.ui.dialogs import Ask

        row = self.timeline.selected
        if row is None:
            self.say("no checkpoint selected", error=True)
            return
        source = self.source

        def named(name: str | None) -> None:
            if not name or not name.strip():
                self.say("no label given: nothing changed")
                return
            self.background("action", lambda: actions.label(source, row.cp, name),
                            self._labelled, lambda line: self.say(line, error=True),
                            reading=False)

        self.push_screen(Ask(f"label {actions.name_of(row.cp)} as:", "a name, e.g. v1"),
                         named)

    def _labelled(self, line: str) -> None:
        self.reload(line)

    def action_copy_path(self) -> None:
        row = self.timeline.selected
        if row is None:
            self.say("no checkpoint selected", error=True)
            return
        source = self.source

        def copied(path: str) -> None:
            self.copy_to_clipboard(path)  # type: ignore[attr-defined] - textual's App
            self.say(f"copied {path}")

        self.background("action", lambda: source.mount_path(row.cp), copied,
                        lambda line: self.say(line, error=True))

    # -- search, projects ----------------------------------------------------------------

    def action_search(self) -> None:
        from rewindfs.ui.finder import Finder

        self.push_screen(Finder(self.source), self._found)

    def _found(self, hit) -> None:
        """Jump to a search's hit: its checkpoint selected, the file shown there."""
        if hit is None:
            return
        if hit.cp.id not in self.timeline.rows:
            self.timeline.append([hit.row])
        self.timeline.select(hit.cp.id)
        self.timeline.list.focus()
        source, path, name = self.source, hit.path, fmt.quote_path(hit.path)

        def work():
            if hit.line:
                return (f"{name} as {fmt.cp_name(hit.cp)} holds it (line {hit.line})",
                        fmt.render_view(source.file_content(hit.cp, path), path))
            return (f"{name}: what {fmt.cp_name(hit.cp)} changed",
                    fmt.render_view(source.change_in(hit.cp, path), path))

        def shown(found) -> None:
            self.diff_pane.show(*found)
            if hit.line:
                self.diff_pane.scroll_to_line(hit.line)

        self.background("diff", work, shown, self.diff_pane.show_error)
        self.say(f"{name} in {actions.name_of(hit.cp)}")

    def action_projects(self) -> None:
        from rewindfs.ui.places import Places

        self.push_screen(Places(self.source.app), self._switch)

    def _switch(self, target) -> None:
        if target is None or target.key == self.source.key:
            return
        from rewindfs.ui.source import Source

        self.source = Source(self.source.app, target)
        self.tip = None
        self.files_pane.waiting("files")
        self.diff_pane.show("diff", Text(""))
        self.reload(f"showing {fmt.clean(target.title)}")
