"""Provides ConfirmDialog: a yes/no question that returns True for yes."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.widgets.footer import Footer


class ConfirmDialog(ModalScreen[bool]):
    """Asks one question; Yes dismisses with True, No or Escape with False."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm-no"),
    ]

    def __init__(self, question: str, yes: str = "Yes, replace", *, yes_is_safe: bool = False) -> None:
        """`yes_is_safe`: Yes loses nothing (creating a folder the user typed), so Enter answers Yes."""
        super().__init__()
        self.question = question
        self.yes = yes
        self.yes_is_safe = yes_is_safe

    def compose(self) -> ComposeResult:
        """The question and two buttons; the safe answer is focused, so Enter gives it."""
        with Vertical(classes="dialog"):
            yield Static(self.question, classes="dialog-title", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.yes, id="yes", variant="primary" if self.yes_is_safe else "warning")
                yield Button("No", id="no", variant="default" if self.yes_is_safe else "primary")
        yield Footer()

    def on_mount(self) -> None:
        """Focus the safe answer."""
        self.query_one("#yes" if self.yes_is_safe else "#no", Button).focus()

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
