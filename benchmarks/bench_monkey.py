"""Runs the UI monkey at scale: thousands of random keys, pastes, clicks and resizes; prints what it did."""

# The same driver as tests/tui/test_monkey.py (which runs a few hundred actions in `make test`). Usage:
#   python benchmarks/bench_monkey.py [ACTIONS] [SEED]

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "tui"))

from monkey import monkey  # noqa: E402
from pilot_flows import settle  # noqa: E402

from advisor.catalog.loader import load_knowledge_from  # noqa: E402
from tui.app import GpuAdvisorApp  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "knowledge"


async def run(actions: int, seed: int, workdir: Path) -> None:
    knowledge = load_knowledge_from(FIXTURE)
    app = GpuAdvisorApp(
        load_knowledge=lambda: knowledge, efficiency="prior", user_data_dir=workdir / "user-data"
    )
    start = time.perf_counter()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        result = await monkey(pilot, actions, seed=seed)
        alive = app.is_running
    elapsed = time.perf_counter() - start
    print(
        f"monkey: seed {seed}, {actions} actions in {elapsed:.1f} s ({elapsed / actions * 1000:.0f} ms each)"
    )
    print(
        f"  sent: {result.keys} keys, {result.actions['paste']} pastes, {result.actions['click']} clicks, "
        f"{result.actions['resize']} resizes, {result.actions['journey']} preset journeys, "
        f"{result.actions['find plans burst']} Ctrl+N bursts, {result.actions['rerank']} re-ranks "
        f"({result.actions['table read']} tables read whole); "
        f"{result.actions['quit asked']} quits asked for (counted, not obeyed)"
    )
    print(f"  full renders checked: {result.renders}; app still up at the end: {alive}")
    print(f"  screens visited ({len(result.screens)}), by actions spent on each:")
    for name, count in result.screens.most_common():
        print(f"    {name:32} {count}")


def main() -> None:
    actions = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-monkey-") as tmp:
        os.chdir(tmp)  # any export the monkey saves lands here
        asyncio.run(run(actions, seed, Path(tmp)))


if __name__ == "__main__":
    main()
