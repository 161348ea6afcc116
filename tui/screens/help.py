"""Provides HelpScreen: the keys and a short guide to each screen, from tui/help.md."""

from __future__ import annotations

from importlib import resources

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from tui.widgets.footer import Footer


def help_text() -> str:
    """The help page shipped with the package."""
    return resources.files("tui").joinpath("help.md").read_text(encoding="utf-8")


class HelpScreen(ModalScreen[None]):
    """The help page over the current screen; Escape, F1 or q closes it."""

    BINDINGS = [Binding("escape,f1,q", "close", "Close", id="help-close")]

    def compose(self) -> ComposeResult:
        """The rendered help page."""
        with Vertical(classes="dialog", id="help-dialog"), VerticalScroll():
            yield Markdown(help_text())
        yield Footer()

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss()
