"""Provides TickList: ordered steps that wrap over several lines and can each be ticked off."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class TickList(OptionList):
    """Ticks off ordered steps with Space, Enter or a click; long steps wrap (SelectionList truncates)."""

    BINDINGS = [
        Binding("space", "tick", "Tick", tooltip="Tick or untick the highlighted step", id="tick-toggle")
    ]

    @dataclass
    class Toggled(Message):
        """The user ticked or unticked one step."""

        tick_list: TickList
        index: int
        done: bool

        @property
        def control(self) -> TickList:
            """The list (lets @on match it by selector)."""
            return self.tick_list

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Space, Enter or a click ticks a step"
        self._steps: list[Content] = []
        self._ticked: set[int] = set()

    @property
    def ticked(self) -> set[int]:
        """Indices of the ticked steps."""
        return set(self._ticked)

    def set_steps(self, steps: list[Content], ticked: set[int]) -> None:
        """Replace the steps and which of them are ticked (posts nothing)."""
        self._steps = steps
        self._ticked = {i for i in ticked if 0 <= i < len(steps)}
        self.clear_options()
        self.add_options(Option(self._prompt(i), id=str(i)) for i in range(len(steps)))
        if steps:
            self.highlighted = 0

    def untick_all(self) -> None:
        """Untick every step (posts nothing)."""
        self._ticked.clear()
        for i in range(len(self._steps)):
            self.replace_option_prompt_at_index(i, self._prompt(i))

    def _prompt(self, index: int) -> Content:
        if index in self._ticked:
            return Content.assemble(("✔ ", "$text-success bold"), self._steps[index].stylize("dim"))
        return Content.assemble(("☐ ", "$text-muted"), self._steps[index])

    def action_tick(self) -> None:
        """Tick or untick the highlighted step."""
        index = self.highlighted
        if index is None or not 0 <= index < len(self._steps):
            return
        done = index not in self._ticked
        (self._ticked.add if done else self._ticked.discard)(index)
        self.replace_option_prompt_at_index(index, self._prompt(index))
        self.post_message(self.Toggled(self, index, done))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter or a click ticks too."""
        event.stop()
        self.action_tick()
