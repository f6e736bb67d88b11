"""`rewind ui`'s questions: the plan of an action and y/n, a name to type, every key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from rewindfs.ui.text import clean

if TYPE_CHECKING:
    from rewindfs.ui.actions import Plan

KEYS = [
    ("↓/↑  j/k", "move (the mouse works too: click, scroll)"),
    ("enter", "open the checkpoint's files (focus moves there, first file selected)"),
    ("escape", "go back (files -> timeline, diff -> files; closes a dialog)"),
    ("tab", "next pane"),
    ("r", "restore the selection: the file, or from the timeline the whole checkpoint"),
    ("g", "restore the whole checkpoint and the repository's .git as it recorded them"),
    ("u", "undo the last restore"),
    ("t", "revert the selected checkpoint's agent turn (and its session's later steps)"),
    ("d", "switch between the diff and the whole file as it was"),
    ("s", "files: changed since the checkpoint / what its step changed"),
    ("l", "label the selected checkpoint"),
    ("c", "copy the checkpoint's path in the mount"),
    ("/", "search file names and text through history"),
    ("p", "other projects (and those fetched from remotes)"),
    ("?", "this list"),
    ("q  ctrl+c", "quit (ctrl+c copies instead while text is selected)"),
]


class Confirm(ModalScreen[bool]):
    """An action's plan (its dry run), then `… y/n`: nothing changes before `y`."""

    BINDINGS = [Binding("y", "answer(True)", "yes"), Binding("n", "answer(False)", "no"),
                Binding("escape", "answer(False)", "no", show=False)]

    def __init__(self, plan: Plan):
        super().__init__()
        self.plan = plan

    def compose(self):
        plan = self.plan
        lines = [*map(clean, plan.lines), "",
                 "  a pre-rollback snapshot is taken first: u undoes it"]
        # The question and its buttons stay in sight (docked at the bottom, the question
        # wrapped), however small the terminal: the plan above them scrolls.
        with Vertical(classes="dialog"):
            with Vertical(classes="answer"):
                yield Static(Text(f"{clean(plan.question)} y/n", style="bold"),
                             classes="question", id="question")
                with Horizontal(classes="buttons"):
                    yield Button("yes (y)", id="yes", compact=True)
                    yield Button("no (n)", id="no", compact=True)
            with VerticalScroll(classes="dialog-body"):
                yield Static(Text(clean(plan.title), style="bold"), classes="dialog-title")
                yield Static(Text("\n".join(lines)))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class Ask(ModalScreen["str | None"]):
    """One line to type (a label's name): enter takes it, escape gives up."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str, placeholder: str = ""):
        super().__init__()
        self.title_text, self.placeholder = title, placeholder

    def compose(self):
        with Vertical(classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), classes="dialog-title")
            yield Input(placeholder=self.placeholder, id="answer")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Help(ModalScreen[None]):
    """Every key."""

    BINDINGS = [Binding("escape", "close", "close"), Binding("question_mark", "close"),
                Binding("q", "close")]

    def compose(self):
        body = Text()
        for key, what in KEYS:
            body.append(f"{key:>9}  ", style="bold")
            body.append(what + "\n")
        with Vertical(classes="dialog"):
            yield Static(Text("keys (escape closes)", style="bold"), classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(body)

    def action_close(self) -> None:
        self.dismiss(None)
