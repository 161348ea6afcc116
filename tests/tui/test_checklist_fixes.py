"""Pilot test: checklist steps keep every wrapped line, whichever entry is opened at whichever size."""

from __future__ import annotations

from pilot_flows import settle
from textual.widgets import OptionList

from tui.screens.checklist import ChecklistScreen
from tui.widgets.tick_list import TickList


async def test_every_step_keeps_its_last_line(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ChecklistScreen)
        entries = screen.query_one("#checklist-entries", OptionList)
        steps = screen.query_one("#entry-steps", TickList)
        for index in range(entries.option_count):
            entries.highlighted = index
            await settle(pilot)
            steps.render_line(0)  # lays the steps out as a frame would
            width = steps.scrollable_content_region.width
            padding = steps.get_component_styles("option-list--option").padding.width
            for i in range(steps.option_count):
                needed = steps._get_visual(steps.get_option_at_index(i)).get_height(
                    steps.styles, width - padding
                )
                assert steps._line_cache.heights[i] == needed, (
                    screen.current.id if screen.current else None,
                    i,
                )
