"""Provides the run_before steps of the snapshot tests: they drive the app to the screen to photograph."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import Input, OptionList

from tui.form import check
from tui.presets import preset
from tui.screens.results import ResultsScreen
from tui.screens.wizard import WizardScreen


async def settle(pilot: Pilot) -> None:
    """Every worker done, every message handled."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def pick_preset(pilot: Pilot, preset_id: str) -> WizardScreen:
    """Choose a preset from the first step (the wizard then shows the model step)."""
    await settle(pilot)
    wizard = pilot.app.screen
    assert isinstance(wizard, WizardScreen)
    presets = wizard.query_one("#presets", OptionList)
    presets.focus()
    presets.highlighted = [presets.get_option_at_index(i).id for i in range(presets.option_count)].index(
        preset_id
    )
    await pilot.press("enter")
    await settle(pilot)
    return wizard


async def results(pilot: Pilot, preset_id: str, tab: str | None = None) -> ResultsScreen:
    """The results of a preset (reached the way Find plans reaches them), optionally on one tab."""
    await settle(pilot)
    values = preset(preset_id).values
    checked = check(values, pilot.app.knowledge)  # type: ignore[attr-defined]
    assert checked.workload is not None and checked.constraints is not None
    wizard = pilot.app.screen
    assert isinstance(wizard, WizardScreen)
    wizard.apply_values(values, reset=True)
    wizard.post_message(WizardScreen.Completed(checked.workload, checked.constraints))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ResultsScreen) and screen.report is not None
    if tab is not None:
        screen.query_one("#plan-tabs").active = tab  # type: ignore[attr-defined]
        await settle(pilot)
    return screen


async def invalid_model_step(pilot: Pilot) -> None:
    """The model step with a value that does not parse, so its message shows beside it."""
    wizard = await pick_preset(pilot, "lora-70b")
    wizard.query_one("#tokens", Input).value = "lots"
    await settle(pilot)
