"""Snapshot of the Fleet screen at a fixed size: the fixture portfolio planned (seeded: the same figures)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_flows import settle, until
from textual.pilot import Pilot

from tui.widgets.fleet_views import KpiTile

ROOT = Path(__file__).resolve().parents[2]
PORTFOLIO = "tests/data/fleet-portfolio.toml"  # relative, so the path shown does not depend on the checkout


def test_fleet_screen(snap_compare, snapshot_app, monkeypatch: pytest.MonkeyPatch) -> None:
    """KPI tiles, the week chart and the cost per owner of the fixture portfolio."""
    monkeypatch.chdir(ROOT)

    async def plan(pilot: Pilot) -> None:
        await settle(pilot)
        pilot.app.action_fleet(PORTFOLIO)

        def shown() -> bool:
            """The worker's plan handled and its KPI tiles mounted (a wait on the workers alone can run
            before the screen has started its worker, on a loaded machine)."""
            plan = getattr(pilot.app.screen, "plan", None)
            tiles = pilot.app.screen.query(KpiTile)
            return plan is not None and len(tiles) == len(plan.kpis) and all(t.is_mounted for t in tiles)

        await until(pilot, shown, "the fleet plan on screen")
        await settle(pilot)

    assert snap_compare(snapshot_app(), terminal_size=(130, 50), run_before=plan)
