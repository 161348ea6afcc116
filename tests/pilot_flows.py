"""Provides the Pilot steps the UI tests, the snapshot tests and the screenshot script share."""

from __future__ import annotations

from collections.abc import Callable
from time import monotonic

from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import OptionList

from tui.form import check
from tui.presets import preset
from tui.screens.results import ResultsScreen
from tui.screens.wizard import WizardScreen


async def settle(pilot: Pilot) -> None:
    """Let every worker finish and every message be handled."""
    for _ in range(2):
        await _workers_done(pilot)
        await pilot.pause()


async def _workers_done(pilot: Pilot) -> None:
    """Wait for every worker; one cancelled on the way (an exclusive worker replaced by a newer run, as under
    load a fast key press does) is not a failure: wait for its replacement instead."""
    from textual.worker import WorkerCancelled

    for _ in range(50):
        try:
            await pilot.app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            continue


async def until(pilot: Pilot, done: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Pause until done() holds: the state itself, never a guess at how long it takes (a pause is shorter
    on a loaded machine: Textual takes a process that gets no CPU for an idle one). Fails naming what."""
    deadline = monotonic() + timeout
    while not done():
        assert monotonic() < deadline, f"still waiting, after {timeout:g} s, for {what}"
        await pilot.pause(0.02)


def scroll_settled(pilot: Pilot, view: Widget) -> bool:
    """The view is where its latest scroll aimed, with no scroll animation running or scheduled."""
    animator = pilot.app.animator
    return (
        view.scroll_y == view.scroll_target_y
        and view.scroll_x == view.scroll_target_x
        and not animator.is_being_animated(view, "scroll_y")
        and not animator.is_being_animated(view, "scroll_x")
    )


async def changed(pilot: Pilot) -> None:
    """Let a changed value reach the form (the wizard checks the form after the next refresh)."""
    await pilot.pause()
    await pilot.pause()


async def choose_preset(pilot: Pilot, preset_id: str) -> WizardScreen:
    """Pick a preset with the keyboard: focus the preset list, move to the preset, press Enter."""
    await settle(pilot)
    wizard = pilot.app.screen
    assert isinstance(wizard, WizardScreen)
    presets = wizard.query_one("#presets", OptionList)
    presets.focus()
    ids = [presets.get_option_at_index(i).id for i in range(presets.option_count)]
    presets.highlighted = ids.index(preset_id)
    await pilot.press("enter")
    await settle(pilot)
    return wizard


async def open_results(pilot: Pilot, preset_id: str, tab: str | None = None, **changes: str) -> ResultsScreen:
    """Skip the wizard's screens: finish it with a preset's values (and changes), as its Find plans button
    does; optionally show one of the detail tabs."""
    await settle(pilot)
    app = pilot.app
    values = {**preset(preset_id).values, **changes}
    checked = check(values, app.knowledge)  # type: ignore[attr-defined]
    assert checked.workload is not None and checked.constraints is not None, checked.errors
    wizard = app.screen
    assert isinstance(wizard, WizardScreen)
    wizard.apply_values(values, reset=True)
    wizard.post_message(WizardScreen.Completed(checked.workload, checked.constraints))
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, ResultsScreen), type(screen)
    if tab is not None:
        screen.query_one("#plan-tabs").active = tab  # type: ignore[attr-defined]
        await settle(pilot)
    return screen
