"""Pilot tests of the results fixes: resize then re-rank, table widths, operations per plan, 80x24, export."""

from __future__ import annotations

from pathlib import Path

from pilot_flows import open_results, settle
from textual.containers import VerticalScroll
from textual.widgets import Footer, Input, Static

from tui.formatting import money_range
from tui.screens.confirm import ConfirmDialog
from tui.screens.export import ExportDialog
from tui.screens.results import ResultsScreen
from tui.widgets.front_chart import FrontChart
from tui.widgets.ops_view import OperationsPanel
from tui.widgets.plan_table import PlanTable
from tui.widgets.plan_views import MemoryPanel


async def rerank(pilot, screen: ResultsScreen, budget: str) -> None:
    """Type a budget and press Enter, then wait for the new ranking."""
    screen.query_one("#budget-usd", Input).value = budget
    screen.query_one("#budget-usd", Input).focus()
    await pilot.press("enter")
    await settle(pilot)


def table_text(table: PlanTable) -> list[str]:
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_resize_then_rerank_on_the_chart_does_not_crash(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_results(pilot, "lora-70b", "tab-front")
        for size, budget in (((80, 24), "100"), ((40, 12), "20000"), ((250, 80), "100")):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            await rerank(pilot, screen, budget)
            chart = screen.query_one(FrontChart)
            chart.render()  # draws the plot now, as the next frame would
            assert app.is_running and app.screen is screen


async def test_table_after_a_rerank_matches_a_fresh_layout(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_results(pilot, "lora-70b")
        table = screen.query_one(PlanTable)
        for budget in ("150", "", "20000"):
            await rerank(pilot, screen, budget)
            after = table_text(table)
            await pilot.resize_terminal(121, 36)
            await settle(pilot)
            await pilot.resize_terminal(120, 36)
            await settle(pilot)
            assert table_text(table) == after


async def test_operations_follow_the_highlighted_plan_and_scroll(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_results(pilot, "lora-70b", "tab-ops")
        panel = screen.query_one(OperationsPanel)
        assert "For plan #1" in str(panel.render())
        screen.query_one(PlanTable).focus()
        await pilot.press("down")
        await settle(pilot)
        second = screen.query_one(PlanTable).selected
        assert second is not None and second.rank == 2
        text = str(panel.render())
        assert f"For plan #2 ({second.gpu} x{second.count})" in text
        scroller = panel.parent
        assert isinstance(scroller, VerticalScroll) and scroller.can_focus
        assert scroller.max_scroll_y > 0  # longer than the tab: it scrolls
        scroller.focus()
        await pilot.press("end")
        await settle(pilot)
        assert scroller.scroll_y == scroller.max_scroll_y
        assert "Launch" in text and "--" not in text.split("Launch")[1].split("\n", 2)[2]


async def test_80x24_shows_cost_footer_and_memory_legend(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_results(pilot, "lora-70b")
        table = screen.query_one(PlanTable)
        x = 0
        for key, column in table.columns.items():
            x += column.get_render_width(table)
            if key.value == "cost":
                break
        assert x <= table.scrollable_content_region.width, "cost column off-screen"
        footer = screen.query_one(Footer)
        assert footer.region.bottom == 24 and footer.region.height == 1
        keys = [b.description for b in footer.query("FooterKey").results()]  # type: ignore[attr-defined]
        assert keys and all(k.region.right <= 80 for k in footer.query("FooterKey"))
        memory = screen.query_one(MemoryPanel)
        scroller = memory.parent
        assert memory.virtual_region.height <= scroller.region.height, "memory legend below the fold"


def test_small_cost_ranges_keep_both_ends() -> None:
    assert money_range(0.86, 1.47) == "$0.86-1.47"
    assert money_range(1.2, 1.4) == "$1.20-1.40"
    assert money_range(111, 350) == "$111-350"
    assert money_range(9.5, 12) == "$9.50-12"
    assert money_range(350.2, 350.4) == "$350"


async def test_export_dialog_drops_a_stale_error_and_asks_before_making_a_folder(
    make_app, tmp_path: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await open_results(pilot, "lora-70b")
        await pilot.press("e")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one("#export-path", Input).value = str(tmp_path)
        await pilot.press("enter")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        message = dialog.query_one("#export-message", Static)
        assert "folder" in str(message.render())
        target = tmp_path / "new" / "deeper" / "plan.toml"
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.pause()
        assert "folder" not in str(message.render()) and not message.has_class("-error")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and not target.parent.exists()
        await pilot.press("y")
        await settle(pilot)
        assert target.exists()
