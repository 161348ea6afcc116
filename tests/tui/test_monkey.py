"""The monkey test at a size that keeps the suite quick (benchmarks/bench_monkey.py runs thousands)."""

from __future__ import annotations

from pathlib import Path

import pytest
from monkey import monkey
from pilot_flows import settle

ACTIONS = 150


async def test_the_app_survives_random_keys_pastes_clicks_and_resizes(
    make_app,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # exports the monkey saves land here
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        run = await monkey(pilot, ACTIONS, seed=11)
        assert app.is_running
    visited = {name.split(":")[0] for name in run.screens}
    assert {"WizardScreen", "ResultsScreen"} <= visited, run.screens
    assert run.keys >= ACTIONS // 2 and run.renders > 0
