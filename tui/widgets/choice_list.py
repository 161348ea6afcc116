"""Provides ChoiceList: a single choice among options that each carry a title and a sentence of help."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class ChoiceList(OptionList):
    """Like a RadioSet, but each option wraps a second line that explains when to choose it."""

    @dataclass
    class Changed(Message):
        """The chosen option changed."""

        choice_list: ChoiceList
        value: str

        @property
        def control(self) -> ChoiceList:
            """The list that changed (lets @on match it by selector)."""
            return self.choice_list

    def __init__(
        self, choices: tuple[tuple[str, str, str], ...], value: str = "", *, id: str | None = None
    ) -> None:
        self._choices = choices
        self._value = value
        super().__init__(*self._choice_options(), id=id)

    def _choice_options(self) -> list[Option]:
        return [
            Option(self._prompt(key, title, help_text), id=key) for key, title, help_text in self._choices
        ]

    def _prompt(self, key: str, title: str, help_text: str) -> Content:
        mark = "●" if key == self._value else "○"
        return Content.assemble((f"{mark} {title}", "bold"), "\n", (f"  {help_text}", "dim"))

    @property
    def value(self) -> str:
        """The chosen option's id ('' when none is chosen)."""
        return self._value

    @value.setter
    def value(self, value: str) -> None:
        if value == self._value:
            return
        self._value = value
        for index, (key, title, help_text) in enumerate(self._choices):
            self.replace_option_prompt_at_index(index, self._prompt(key, title, help_text))
        if value:
            self.highlighted = next(i for i, (key, _, _) in enumerate(self._choices) if key == value)
        self.post_message(self.Changed(self, value))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter or a click chooses the highlighted option."""
        event.stop()
        self.value = event.option.id or ""
