"""Pilot tests of the Fleet screen: reached by a key, planned in a worker from a fixture portfolio, KPI tiles
green or red, the portfolio and the cost per owner filled, and a bad file said in one line."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Input, Static

from tests.pilot_flows import settle
from tui.screens.fleet import COST_COLUMNS, JOB_COLUMNS, FleetReady, FleetScreen, fleet_plan
from tui.widgets.fleet_views import KpiTile, WeekChart, cost_rows, job_rows

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
        owners = {str(screen.query_one("#fleet-costs", DataTable).get_row_at(i)[0]) for i in range(3)}
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


async def test_fleet_tables_are_sized_when_the_plan_arrives(make_app) -> None:
    """A frame painted the moment the plan is shown, before the tables next go idle (a loaded machine paints
    one there), has each column at its final width: left to the table, the header was cut to its labels'
    widths and Textual kept that line above the new rows until something repainted the table."""
    app = make_app()
    async with app.run_test(size=(130, 50)) as pilot:
        await settle(pilot)
        screen = FleetScreen(app.engine)  # no file: nothing planned until the plan below is handed over
        await app.push_screen(screen)
        await settle(pilot)
        plan = fleet_plan(app.engine, str(PORTFOLIO))
        screen._ready(FleetReady(screen._generation, plan))  # as the worker's message; no await: no idle
        for table_id, columns, rows in (
            ("#fleet-jobs", JOB_COLUMNS, job_rows(plan)),
            ("#fleet-costs", COST_COLUMNS, cost_rows(plan)),
        ):
            table = screen.query_one(table_id, DataTable)
            header, first = table.render_line(0).text, table.render_line(1).text
            at_header = at_first = 0
            for label, cell in zip(columns, rows[0], strict=True):
                assert cell in first[at_first:], f"{table_id}: {cell!r} cut to its column's header: {first!r}"
                at_header, at_first = header.index(label, at_header), first.index(cell, at_first)
                assert at_header == at_first, f"{table_id}: {label!r} not above its cells: {header!r}"
