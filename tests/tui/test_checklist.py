"""Pilot tests of the checklist: search, open, tick, restart the app (ticks kept), clear; help and palette."""

from __future__ import annotations

import json
from pathlib import Path

from pilot_flows import settle
from textual.widgets import Input, OptionList, Static

from tui.screens.checklist import ChecklistScreen
from tui.screens.help import HelpScreen
from tui.widgets.tick_list import TickList


async def open_checklist(pilot, query: str) -> ChecklistScreen:
    """F2, type a search, open the first hit's steps."""
    await settle(pilot)
    await pilot.press("f2")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ChecklistScreen)
    await pilot.press("slash")
    search = screen.query_one("#checklist-query", Input)
    assert search.has_focus
    search.value = query[:-1]  # typed, bar the last key
    await pilot.press(query[-1])
    await pilot.press("enter")  # to the list
    await pilot.press("enter")  # into the steps
    await settle(pilot)
    return screen


async def test_search_tick_restart_keeps_ticks_then_clear(make_app, tmp_path: Path) -> None:
    data_dir = tmp_path / "ticks"
    app = make_app(data_dir)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await open_checklist(pilot, "nccl")
        assert screen.current is not None and screen.current.id == "nccl-hang"
        steps = screen.query_one("#entry-steps", TickList)
        assert steps.has_focus
        await pilot.press("space", "down", "down", "enter")  # tick step 1 (space) and step 3 (enter)
        await settle(pilot)
        assert steps.ticked == {0, 2}
    saved = json.loads((data_dir / "checklist-ticks.json").read_text(encoding="utf-8"))
    assert saved == {"nccl-hang": [0, 2]}

    again = make_app(data_dir)  # a restart: a new app on the same data directory
    async with again.run_test(size=(100, 32)) as pilot:
        screen = await open_checklist(pilot, "nccl")
        steps = screen.query_one("#entry-steps", TickList)
        assert steps.ticked == {0, 2}
        await pilot.press("x", "y")  # clear this entry's ticks (asked first: yes)
        await settle(pilot)
        assert steps.ticked == set()
    assert json.loads((data_dir / "checklist-ticks.json").read_text(encoding="utf-8")) == {}


async def test_browse_search_and_show_all(make_app, fixture_knowledge) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ChecklistScreen)
        entries = screen.query_one("#checklist-entries", OptionList)
        assert entries.option_count == len(fixture_knowledge.checklist)
        await pilot.press("down")  # browse: the next entry opens
        await pilot.pause()
        assert screen.current is not None and screen.current.id == fixture_knowledge.checklist[1].id
        screen.query_one("#checklist-query", Input).value = "zzz-no-such-error"
        await pilot.pause()
        assert entries.option_count == 0
        assert "No entry matches" in str(screen.query_one("#entry-header", Static).render())
        entries.focus()
        await pilot.press("a")  # all entries again
        await pilot.pause()
        assert entries.option_count == len(fixture_knowledge.checklist)
        screen.query_one("#entry-tabs").active = "tab-symptoms"
        await pilot.pause()
        assert "Symptoms" in str(screen.query_one("#entry-symptoms", Static).render())
        await pilot.press("f1")  # help over the checklist, and back
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
