"""Times the fleet planner on the shipped portfolios: profile, size and simulate (prints figures).

Usage: python benchmarks/bench_fleet.py [PORTFOLIO.toml ...]. Each figure is CPU time of this process (one
core), after the knowledge and the efficiency model are loaded. The goal (issue 18): the lab portfolio, one
year simulated, 20 replications, under 10 s on one core."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from advisor.catalog import load_knowledge
from advisor.fleet import plan as fleet_plan
from advisor.fleet.portfolio import load_portfolio
from advisor.learned.efficiency.select import efficiency_model

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [ROOT / "examples" / "lab-portfolio.toml", ROOT / "examples" / "product-portfolio.toml"]


def bench(path: Path, knowledge, model) -> None:
    """One portfolio: the time to each stage and the plan it chose."""
    portfolio = load_portfolio(path, knowledge)
    marks: list[tuple[str, float]] = []
    start = time.process_time()

    def mark(message: str) -> None:
        marks.append((message, time.process_time() - start))

    plan = fleet_plan.plan_fleet(knowledge, portfolio, model, progress=mark)
    total = time.process_time() - start
    profiled = next(t for m, t in marks if m.startswith("sizing"))
    simulated_from = next(t for m, t in marks if m.startswith("simulating"))
    s = portfolio.sizing
    print(
        f"{path.name}: {total:.2f} s CPU ({profiled:.2f} s per-job model, "
        f"{simulated_from - profiled:.2f} s sizing, {total - simulated_from:.2f} s final simulation of "
        f"{s.weeks:g} weeks x {s.replications} replications); chose {plan.chosen}, "
        f"TCO ${plan.tco_usd:,.0f}"
    )


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv[1:]] or SHIPPED
    knowledge = load_knowledge()
    model = efficiency_model(knowledge)
    for path in paths:
        bench(path, knowledge, model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
