"""`rewind ui`'s other projects (`p`): every project of the store, and those fetched from
remotes (`@REMOTE/NAME`), as `rewind list --all-projects` names them (cli.target)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from rewindfs.ui import text as fmt
from rewindfs.ui.panes import Pane

if TYPE_CHECKING:
    from rewindfs.cli.app import App
    from rewindfs.cli.target import Target


def targets(app: App) -> list[Target]:
    """Local projects, most recently touched first, then fetched ones."""
    from pathlib import Path

    from rewindfs.cli.target import Target, fetched
    from rewindfs.store.history import projects

    if not app.store.exists():
        return []
    local = sorted(projects.list_records(app.store.layout), key=lambda r: -r.last_touch)
    return [Target(r.h16, Path(r.workdir)) for r in local] + fetched(app, own=False)


class Places(ModalScreen["Target | None"]):
    BINDINGS = [Binding("escape", "cancel", "cancel"), Binding("p", "cancel", show=False)]

    def __init__(self, app: App):
        super().__init__()
        self.rewind_app = app
        self.found: list[Target] = []

    def compose(self):
        with Vertical(classes="dialog"):
            yield Static(Text("projects (enter opens one, escape closes)", style="bold"),
                         classes="dialog-title")
            yield Pane(id="projects-list")

    def on_mount(self) -> None:
        lst = self.query_one("#projects-list", Pane)
        try:
            self.found = targets(self.rewind_app)
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback
            line = self.app.one_line(exc)  # type: ignore[attr-defined]
            lst.add_option(Option(Text(f"error: {line}", style="bold red"), disabled=True))
            return
        if not self.found:
            lst.add_option(Option(Text("no projects have checkpoints yet"), disabled=True))
        lst.add_options([Option(Text(fmt.clean(t.title), no_wrap=True, overflow="ellipsis"),
                                id=str(i)) for i, t in enumerate(self.found)])
        lst.focus()
        if self.found:
            lst.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.found[int(event.option.id or 0)])

    def action_cancel(self) -> None:
        self.dismiss(None)
