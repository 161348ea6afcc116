"""Provides the run_before steps of the snapshot tests: they drive the app to the screen to photograph."""

from __future__ import annotations

from pilot_flows import choose_preset as pick_preset
from pilot_flows import open_results, settle
from textual.pilot import Pilot
from textual.widgets import Input

from tui.screens.results import ResultsScreen


async def results(pilot: Pilot, preset_id: str, tab: str | None = None) -> ResultsScreen:
    """The results of a preset, optionally on one tab."""
    screen = await open_results(pilot, preset_id, tab)
    assert screen.report is not None
    return screen


async def invalid_model_step(pilot: Pilot) -> None:
    """The model step with a value that does not parse, so its message shows beside it."""
    wizard = await pick_preset(pilot, "lora-70b")
    wizard.query_one("#tokens", Input).value = "lots"
    await settle(pilot)
