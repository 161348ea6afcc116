"""Provides FieldRow: a label, one input control and its validation message beside it; field_row() builds
one from the core's field registry (label, hint, placeholder, choices)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Input, Label, SelectionList, Static

from advisor.question.fields import FIELDS
from tui.form import CHOICES, DEFAULTS
from tui.widgets.choice_list import ChoiceList
from tui.widgets.segmented import Segmented


class FieldRow(Horizontal):
    """One form field: reads and writes its control's value whatever the control's type."""

    def __init__(self, field: str, label: str, control: Widget, hint: str = "") -> None:
        super().__init__(id=f"row-{field.replace('_', '-')}", classes="field-row")
        self.field = field
        self.control = control
        self.hint = hint
        self.default = DEFAULTS.get(field, "")
        self._label = label
        self._shown: tuple[str, bool, bool] | None = None

    def compose(self) -> ComposeResult:
        """Label, control, message."""
        yield Label(self._label, classes="field-label")
        yield self.control
        yield Static(self.hint, classes="field-message")

    @property
    def value(self) -> Any:
        """The control's value as the form reads it ('' when nothing is chosen)."""
        c = self.control
        if isinstance(c, Input):
            return c.value.strip()
        if isinstance(c, (ChoiceList, Segmented)):
            return c.value
        if isinstance(c, SelectionList):
            return tuple(c.selected)
        raise TypeError(f"unsupported control {type(c).__name__}")

    def set_value(self, value: Any) -> None:
        """Set the control (presets, restart); posts the control's own Changed message when it changes."""
        if value == self.value:
            return
        c = self.control
        if isinstance(c, Input):
            c.value = "" if value is None else str(value)
        elif isinstance(c, ChoiceList):
            c.value = value or ""
        elif isinstance(c, Segmented):
            c.value = value or self.default
        elif isinstance(c, SelectionList):
            c.deselect_all()
            for item in value or ():
                c.select(item)

    def reset(self) -> None:
        """Back to the field's default."""
        self.set_value(self.default)

    def show_message(self, error: str | None) -> None:
        """The error beside the field, or its hint when it is valid.

        An empty field that needs a value is shown as a request, not as a mistake.
        """
        text = error or self.hint
        empty = self.value in ("", ())
        state = (text, bool(error) and not empty, bool(error) and empty)
        if state == self._shown:
            return  # unchanged: skip the restyle
        self._shown = state
        self.query_one(".field-message", Static).update(text)
        self.set_class(state[1], "-invalid")
        self.set_class(state[2], "-required")


def field_row(name: str, control: Widget | None = None) -> FieldRow:
    """The row of a registry field: its label and hint, and a control of its kind (a select for choices, a
    tick list for lists, else a text input with the field's placeholder), unless one is given."""
    f = FIELDS[name]
    control_id = name.replace("_", "-")
    if control is None and name in CHOICES:
        control = Segmented(CHOICES[name], DEFAULTS[name], id=control_id)
    elif control is None and f.kind == "list":
        control = SelectionList[str](id=control_id)
    elif control is None:
        control = Input(placeholder=f.placeholder, id=control_id, select_on_focus=False)
    return FieldRow(name, f.label, control, hint=f.hint)
