"""Snapshot of the Fleet screen at a fixed size: the fixture portfolio planned (seeded: the same figures)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

ROOT = Path(__file__).resolve().parents[2]
PORTFOLIO = "tests/data/fleet-portfolio.toml"  # relative, so the path shown does not depend on the checkout


def test_fleet_screen(snap_compare, snapshot_app, monkeypatch: pytest.MonkeyPatch) -> None:
    """KPI tiles, the week chart and the cost per owner of the fixture portfolio."""
    monkeypatch.chdir(ROOT)

    async def plan(pilot: Pilot) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        pilot.app.action_fleet(PORTFOLIO)
        # The screen mounts, then starts its worker, then mounts the results from the worker's message: wait
        # for the plan itself (a wait on the workers alone can run before the worker exists, on a loaded
        # machine), bounded so that a screen that never plans fails on its snapshot rather than hanging.
        for _ in range(600):
            await pilot.pause(0.05)
            await pilot.app.workers.wait_for_complete()
            if getattr(pilot.app.screen, "plan", None) is not None:
                break
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(snapshot_app(), terminal_size=(130, 50), run_before=plan)
