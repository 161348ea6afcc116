"""Pilot tests of the Fleet screen: reached by a key, planned in a worker from a fixture portfolio, KPI tiles
green or red, the portfolio and the cost per owner filled, and a bad file said in one line."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Input, Static

from tests.pilot_flows import settle
from tui.screens.fleet import FleetScreen
from tui.widgets.fleet_views import KpiTile, WeekChart

PORTFOLIO = Path(__file__).resolve().parents[1] / "data" / "fleet-portfolio.toml"


async def test_fleet_screen_opens_from_a_key_and_plans_a_fixture_file(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await pilot.press("f4")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        field = screen.query_one("#fleet-path", Input)
        field.value = str(PORTFOLIO)
        field.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert screen.plan is not None
        tiles = list(screen.query(KpiTile))
        names = [t.kpi.name for t in tiles]
        assert "GPU utilisation" in names and "queue wait, regular (median)" in names
        assert all(t.has_class("-green") or t.has_class("-red") for t in tiles if t.kpi.verdict != "-")
        assert screen.query_one("#fleet-jobs", DataTable).row_count == 2
        owners = {screen.query_one("#fleet-costs", DataTable).get_row_at(i)[0] for i in range(3)}
        assert {"research", "product"} <= owners
        assert "TCO $" in str(screen.query_one("#fleet-status", Static).render())
        assert screen.query_one(WeekChart)._plan is screen.plan
        await pilot.press("escape")
        assert not isinstance(app.screen, FleetScreen)


async def test_fleet_screen_says_what_is_wrong_with_a_bad_file(make_app, tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        PORTFOLIO.read_text(encoding="utf-8").replace('priority = "regular"\n', ""), encoding="utf-8"
    )
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.action_fleet(str(bad))
        await pilot.pause()
        await settle(pilot)
        status = str(app.screen.query_one("#fleet-status", Static).render())
        assert status.startswith("Cannot plan:") and "workload 'finetune'" in status and "priority" in status
        assert "\n" not in status


async def test_fleet_is_in_the_command_palette(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Plan a fleet for a portfolio" in titles
