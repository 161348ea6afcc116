"""Provides Segmented: a choice among a few options, all visible, picked with arrows, Space or a click."""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

GAP = 1


class Segmented(Widget, can_focus=True):
    """Like a Select with every option on show: cheaper to mount (one widget) and one key press to change."""

    BINDINGS = [
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("right,space", "move(1)", "Next option", show=False),
    ]
    COMPONENT_CLASSES = {"segmented--option", "segmented--selected"}
    DEFAULT_CSS = """
    Segmented {
        width: auto;
        height: auto;
        padding: 0 1;
        border: tall transparent;
    }
    Segmented:focus {
        border: tall $accent;
        background: $boost;
    }
    Segmented > .segmented--option {
        background: $boost;
    }
    Segmented > .segmented--selected {
        background: $primary 40%;
        text-style: bold;
    }
    Segmented:focus > .segmented--selected {
        background: $primary;
        color: $text;
    }
    """

    value: reactive[str] = reactive("", init=False)

    @dataclass
    class Changed(Message):
        """The chosen option changed."""

        segmented: Segmented
        value: str

        @property
        def control(self) -> Segmented:
            """The widget that changed (lets @on match it by selector)."""
            return self.segmented

    def __init__(self, options: tuple[str, ...], value: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.options = options
        self.set_reactive(Segmented.value, value)

    def _layout(self, width: int) -> list[tuple[int, int, str]]:
        """(line, x, option) of each option, wrapping between options (never inside one)."""
        placed, line, x = [], 0, 0
        for option in self.options:
            w = len(option) + 2
            if x and x + w > width:
                line, x = line + 1, 0
            placed.append((line, x, option))
            x += w + GAP
        return placed

    def get_content_width(self, container: Size, viewport: Size) -> int:
        """All options on one line."""
        return sum(len(o) + 2 for o in self.options) + GAP * (len(self.options) - 1)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """As many lines as the options need at this width."""
        return self._layout(width)[-1][0] + 1 if self.options else 1

    def render(self) -> Content:
        """The options side by side, the chosen one highlighted."""
        option_style = self.get_visual_style("segmented--option", partial=True)
        selected = self.get_visual_style("segmented--selected", partial=True)
        lines: list[list[Content]] = []
        for line, _x, option in self._layout(max(1, self.content_size.width)):
            if line == len(lines):
                lines.append([])
            elif lines[line]:
                lines[line].append(Content(" " * GAP))
            lines[line].append(
                Content.styled(f" {option} ", selected if option == self.value else option_style)
            )
        return Content("\n").join(Content.assemble(*parts) for parts in lines)

    def watch_value(self, value: str) -> None:
        """Tell the form."""
        self.post_message(self.Changed(self, value))

    def action_move(self, step: int) -> None:
        """The next or previous option (wrapping around)."""
        index = self.options.index(self.value) if self.value in self.options else 0
        self.value = self.options[(index + step) % len(self.options)]

    def on_click(self, event: events.Click) -> None:
        """Pick the option under the pointer."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        for line, x, option in self._layout(max(1, self.content_size.width)):
            if line == offset.y and x <= offset.x < x + len(option) + 2:
                self.value = option
                return
