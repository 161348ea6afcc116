"""Provides WorkloadStep: the wizard's first step, the kind of job and the presets for common jobs."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tui.presets import KINDS, PRESETS
from tui.widgets.choice_list import ChoiceList
from tui.widgets.field import field_row


class WorkloadStep(VerticalScroll):
    """Step 1: what the user wants to do, or a preset that fills the whole wizard."""

    HELP = (
        "Choose the kind of job with Enter or a click, or pick a preset to fill every step for a common job."
    )

    @dataclass
    class PresetChosen(Message):
        """The user picked a preset."""

        preset_id: str

    def compose(self) -> ComposeResult:
        """The kinds, then the presets."""
        yield Static("What do you want to do? (or start from a common job, below)", classes="step-heading")
        yield field_row("kind", ChoiceList(KINDS, id="kind"))
        yield Static("Or start from a common job", classes="step-heading")
        yield OptionList(
            *(
                Option(Content.assemble((p.title, "bold"), "\n", (f"  {p.summary}", "dim")), id=p.id)
                for p in PRESETS
            ),
            id="presets",
        )

    @on(OptionList.OptionSelected, "#presets")
    def _preset_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.PresetChosen(event.option.id))
