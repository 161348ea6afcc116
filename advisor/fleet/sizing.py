"""Provides size(): for each GPU type the smallest cluster that meets the KPIs in simulation, a training core
+ inference edge mix, and the one of lowest total cost of ownership."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from advisor.fleet.design import INFERENCE, Design, Part, Setup
from advisor.fleet.portfolio import Entry
from advisor.fleet.stats import RunFigures
from advisor.ops.tco import TcoInputs, tco

SHORT_WEEKS = 8.0
"""Each candidate size is screened on this many simulated weeks..."""
SHORT_RUNS = 3
"""... over this many replications; the chosen design is then run for the portfolio's full horizon."""
MAX_MISSED = 0.01
"""At most 1% of deadline-bound jobs may finish late for a size to count as meeting its deadlines."""
MAX_SHORT = 0.001
"""Serving may lack replicas at most 0.1% of its replica-hours."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A design that met the KPIs in screening, with its cost."""

    design: Design
    tco_usd: float
    utilisation: float
    runs: tuple[RunFigures, ...]


def meets(setup: Setup, runs: list[RunFigures]) -> bool:
    """Deadlines met, the guide's queue-wait target held for urgent and regular training (median wait), and
    serving never short of replicas."""
    target = setup.tco_figures.operations["max_queue_wait_min"].value
    missed = statistics.fmean(r.missed_fraction for r in runs)
    short = statistics.fmean(r.serving_short for r in runs)
    for cls in ("urgent", "regular"):
        waits = [r.wait_p50_min[cls] for r in runs if cls in r.wait_p50_min]
        if waits and statistics.fmean(waits) >= target:
            return False
    return missed <= MAX_MISSED and short <= MAX_SHORT


def cost(setup: Setup, design: Design, runs: list[RunFigures]) -> float:
    """Total cost of ownership over the portfolio's years, each part at its simulated utilisation."""
    total = 0.0
    for part in design.parts:
        util = statistics.fmean(r.utilisation_by_pool[part.name] for r in runs)
        inputs = TcoInputs(
            gpu=part.gpu, count=part.gpus, years=setup.portfolio.sizing.years, utilization=max(util, 0.01)
        )
        total += tco(setup.knowledge, inputs).total_usd
    return total


def _smallest(
    setup: Setup, make: Callable[[int], Design], node: int, start: int, seed: int
) -> Candidate | None:
    """The smallest size (whole servers, from `start`) whose design meets the KPIs: doubling, then halving."""
    tried: dict[int, list[RunFigures] | None] = {}

    def ok(gpus: int) -> bool:
        if gpus not in tried:
            design = make(gpus)
            runs = setup.run(design, SHORT_WEEKS, SHORT_RUNS, seed) if setup.fits(design) else None
            tried[gpus] = runs if runs is not None and meets(setup, runs) else None
        return tried[gpus] is not None

    lo, hi = start - node, start
    while not ok(hi):
        lo, hi = hi, hi + max(node, (hi - start) or node)
        if hi > max(64 * node, 16 * start):
            return None
    while hi - lo > node:
        mid = lo + ((hi - lo) // (2 * node)) * node
        if ok(mid):
            hi = mid
        else:
            lo = mid
    design = make(hi)
    runs = tried[hi]
    assert runs is not None
    return Candidate(
        design, cost(setup, design, runs), statistics.fmean(r.utilisation for r in runs), tuple(runs)
    )


def _start(
    setup: Setup, design_of: Callable[[int], Design], gpu: str, node: int, entries: Sequence[Entry]
) -> int:
    """Whole servers covering the largest job and the mean load by arithmetic (the search's floor)."""
    largest = max(setup.shapes[e.name][gpu].gpus for e in entries)
    load = setup.mean_load(design_of(node))
    return max(node, math.ceil(max(largest, load) / node) * node)


def size_single(setup: Setup, gpu: str, seed: int) -> Candidate | None:
    """One pool of `gpu` for the whole portfolio."""
    entries = setup.portfolio.workload
    if any(gpu not in setup.shapes[e.name] for e in entries):
        return None
    node = max(setup.shapes[e.name][gpu].node_size for e in entries)

    def make(n: int) -> Design:
        return Design((Part("cluster", gpu, n, node),))

    return _smallest(setup, make, node, _start(setup, make, gpu, node, entries), seed)


def size_mix(setup: Setup, core: Candidate, edge: Candidate, seed: int) -> Candidate | None:
    """The core and the edge together, each at its own smallest size, run as one cluster."""
    c, e = core.design.parts[0], edge.design.parts[0]
    design = Design((Part("core", c.gpu, c.gpus, c.node_size), Part("edge", e.gpu, e.gpus, e.node_size)))
    runs = setup.run(design, SHORT_WEEKS, SHORT_RUNS, seed)
    if not meets(setup, runs):
        return None
    return Candidate(
        design, cost(setup, design, runs), statistics.fmean(r.utilisation for r in runs), tuple(runs)
    )


def split(setup: Setup, inference: bool) -> Setup:
    """The same setup holding only the inference (or only the training) entries."""
    keep = tuple(e for e in setup.portfolio.workload if (e.priority in INFERENCE) == inference)
    portfolio = dataclasses.replace(setup.portfolio, workload=keep)
    return Setup(setup.knowledge, portfolio, setup.shapes)
