"""Provides ExportDialog: asks where to write the TOML export and returns the path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from tui.widgets.footer import Footer

HINT = "The plans, what was assumed and the launch files, as TOML (the same as the command line's export)."
LABEL = "File (relative to the current directory, or absolute):"


class ExportDialog(ModalScreen[Path | None]):
    """A path field (pre-filled with a sensible name), Save and Cancel; an earlier error is shown under it."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="export-cancel")]

    def __init__(
        self,
        default: str,
        error: str = "",
        *,
        label: str = LABEL,
        rule: Callable[[str], str | None] | None = None,
    ) -> None:
        """rule: a further check of the text (the served UI's: a plain file name only)."""
        super().__init__()
        self.default = default
        self.error = error
        self.label = label
        self.rule = rule

    def compose(self) -> ComposeResult:
        """Title, path input, message, buttons."""
        with Vertical(classes="dialog", id="export-dialog"):
            yield Static("Export the recommendation as TOML", classes="dialog-title")
            yield Label(self.label)
            yield Input(self.default, id="export-path", select_on_focus=False)
            yield Static(
                self.error or HINT,
                id="export-message",
                classes="-error" if self.error else "",
                markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        """The cursor goes to the end of the path, ready to edit the name."""
        path_input = self.query_one("#export-path", Input)
        path_input.focus()
        path_input.cursor_position = len(path_input.value)

    @on(Input.Changed, "#export-path")
    def _path_changed(self, event: Input.Changed) -> None:
        problem = self._problem(event.value)
        self.query_one("#save", Button).disabled = problem is not None
        message = self.query_one("#export-message", Static)
        if problem is None and self.error and event.value == self.default:
            return  # the earlier error (a folder, a failed write) is about this very text: keep it
        # Once the text is edited, an earlier error no longer holds.
        self.error = ""
        message.update(problem if problem is not None else HINT)
        message.set_class(problem is not None, "-error")

    def _problem(self, text: str) -> str | None:
        """Why a path cannot be used, checked without touching the disk."""
        text = text.strip()
        if not text:
            return "Give a file name."
        if text.endswith(("/", "\\")):
            return "That is a folder: add a file name."
        if text.lower().endswith(".json"):
            return "The export is TOML: name it .toml (the command line's --format json writes JSON)."
        return self.rule(text) if self.rule else None

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#save")
    def _save(self) -> None:
        text = self.query_one("#export-path", Input).value.strip()
        if self._problem(text) is None:
            self.dismiss(Path(text).expanduser())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close without exporting."""
        self.dismiss(None)
