"""Provides plan_fleet(): a portfolio sized, simulated and priced, every KPI against the guide's target."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from advisor.catalog.loader import Knowledge
from advisor.fleet.costs import Attribution, Buying, attribution, buying, by_owner
from advisor.fleet.design import Design, Setup
from advisor.fleet.portfolio import Portfolio
from advisor.fleet.profile import profile
from advisor.fleet.sizing import Candidate, cost, size_mix, size_single, split
from advisor.fleet.stats import CLASS_NAMES, Ci, RunFigures
from advisor.learned.efficiency import EfficiencyModel
from advisor.question.records import dump

SHORTLIST = ("a100-80gb-sxm", "h100-sxm", "b200", "a40")
"""Default GPU types the sizing tries: data-centre GPUs with a sourced purchase price, one per generation,
and a low-power inference card."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobLine:
    """One entry as it runs on the chosen design."""

    name: str
    owner: str
    priority: str
    gpu: str
    gpus: int
    hours: float
    layout: str
    per_week: float | None = None
    requests_per_s: float | None = None
    deadline_hours: float | None = None
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """A design that met the KPIs in screening."""

    label: str
    gpus: int
    tco_usd: float
    utilisation: float
    chosen: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Kpi:
    """One figure with its 95% interval over the replications and the guide's target."""

    name: str
    value: Ci
    unit: str
    target: str
    verdict: str
    """green, red, or '-' where the guide sets no target."""
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetPlan:
    """The whole fleet answer."""

    portfolio: dict[str, Any]
    chosen: str
    parts: tuple[dict[str, Any], ...]
    jobs: tuple[JobLine, ...]
    options: tuple[Option, ...]
    kpis: tuple[Kpi, ...]
    waits: dict[str, dict[str, Ci]]
    ratio: dict[str, Any]
    reserve: dict[str, Any]
    week_utilisation: tuple[float, ...]
    attribution: tuple[Attribution, ...]
    cost_by_owner: dict[str, float]
    buying: Buying
    tco_usd: float
    weeks: float
    replications: int
    notes: tuple[str, ...]

    def plain(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dump(self, mode="json")


def _verdict(ok: bool) -> str:
    return "green" if ok else "red"


def _wait_kpis(setup: Setup, runs: list[RunFigures]) -> list[Kpi]:
    """The guide's queue-wait target on the median wait of each training class that ran."""
    target = setup.tco_figures.operations["max_queue_wait_min"].value
    out = []
    for cls in ("urgent", "regular"):
        ci = Ci.of([r.wait_p50_min.get(cls, math.nan) for r in runs])
        if not math.isnan(ci.mean):
            out.append(
                Kpi(
                    name=f"queue wait, {cls} (median)",
                    value=ci,
                    unit="min",
                    target=f"< {target:.0f} min",
                    verdict=_verdict(ci.mean < target),
                )
            )
    return out


def _kpis(setup: Setup, runs: list[RunFigures]) -> list[Kpi]:
    """Every KPI against the guide's target, from the replications."""
    op = setup.tco_figures.operations
    util = Ci.of([r.utilisation for r in runs])
    fails = Ci.of([r.failures_per_gpu_month for r in runs])
    missed = Ci.of([r.missed_fraction for r in runs])
    out = [
        Kpi(
            name="GPU utilisation",
            value=util,
            unit="fraction",
            target=f">= {op['target_utilization'].value:.0%}",
            verdict=_verdict(util.mean >= op["target_utilization"].value),
            note="GPUs allocated to jobs and replicas",
        ),
    ]
    out += _wait_kpis(setup, runs)
    out += [
        Kpi(
            name="jobs missing their deadline",
            value=missed,
            unit="fraction",
            target="0 (the deadlines given)",
            verdict=_verdict(missed.mean <= 0.01),
            note="late or unfinished past their deadline",
        ),
        Kpi(
            name="GPU failures",
            value=fails,
            unit="per GPU-month",
            target=f"< {op['hardware_failure_target_per_month'].value:.1%} a month",
            verdict=_verdict(fails.mean < op["hardware_failure_target_per_month"].value),
            note=f"simulated at the measured {op['hardware_failure_rate_per_month'].value:.2%}/GPU-month "
            "(Llama 3, 16,384 H100s): the guide's target is below what was measured at scale",
        ),
        Kpi(
            name="energy",
            value=Ci.of([r.energy_kwh for r in runs]),
            unit="kWh",
            target="-",
            verdict="-",
            note="busy GPUs at their measured draw under the caps, + server share, x PUE",
        ),
        Kpi(
            name="GFLOPS per watt",
            value=Ci.of([r.gflops_per_w for r in runs]),
            unit="GFLOPS/W",
            target="-",
            verdict="-",
            note="the guide names the metric but sets no target; IT power, hardware FLOPs",
        ),
    ]
    return out


def _waits(runs: list[RunFigures]) -> dict[str, dict[str, Ci]]:
    out = {}
    for cls in CLASS_NAMES.values():
        p50 = [r.wait_p50_min[cls] for r in runs if cls in r.wait_p50_min]
        if p50:
            out[cls] = {
                "p50_min": Ci.of(p50),
                "p95_min": Ci.of([r.wait_p95_min[cls] for r in runs if cls in r.wait_p95_min]),
            }
    return out


def _ratio(setup: Setup, design: Design, runs: list[RunFigures]) -> dict[str, Any]:
    share = setup.tco_figures.operations["hybrid_train_share"].value
    train = statistics.fmean(r.train_gpu_hours for r in runs)
    infer = statistics.fmean(r.inference_gpu_hours for r in runs)
    out: dict[str, Any] = {
        "train_gpu_hours_share": round(train / (train + infer), 4) if train + infer else None,
        "guide_train_share": share,
        "guide": f"{share / (1 - share):.0f}:1 training:inference compute",
    }
    out["implied"] = f"{train / infer:.2f}:1" if infer else "training only"
    if len(design.parts) == 2:
        out["capacity"] = f"{design.parts[0].gpus}:{design.parts[1].gpus} GPUs (core:edge)"
    return out


def _reserve(setup: Setup, design: Design) -> dict[str, Any]:
    load = setup.mean_load(design)
    needed = 1.0 - load / design.gpus
    guide = setup.tco_figures.operations["elastic_reserve_fraction"].value
    return {
        "mean_load_gpus": round(load, 2),
        "needed_fraction": round(needed, 4),
        "guide_fraction": guide,
        "meaning": "capacity above the portfolio's mean load that the KPIs needed (queues, gangs, peaks)",
        "verdict": "more than the guide's" if needed > guide else "within the guide's",
    }


def _jobs(setup: Setup, design: Design) -> tuple[JobLine, ...]:
    from advisor.fleet.design import part_for

    out = []
    for e in setup.portfolio.workload:
        s = setup.shapes[e.name][part_for(e, design).gpu]
        note = "" if s.fits_turnaround else "no size finishes within its deadline or turnaround: the fastest"
        out.append(
            JobLine(
                name=e.name,
                owner=e.owner,
                priority=e.priority,
                gpu=s.gpu,
                gpus=s.gpus,
                hours=round(s.hours, 3),
                layout=s.layout,
                per_week=e.per_week,
                requests_per_s=e.requests_per_s,
                deadline_hours=e.deadline_hours,
                note=note,
            )
        )
    return tuple(out)


def _notes(setup: Setup) -> tuple[str, ...]:
    op, pc = setup.tco_figures.operations, setup.tco_figures.power_cap
    return (
        "each job's GPUs, hours, checkpoints and FLOPs come from the per-job model (recommend's search, "
        "efficiency model and goodput), the smallest count that meets its deadline (or turnaround)",
        f"night cap {pc['guide_night_cap_fraction'].value:.0%} "
        f"{pc['guide_night_start_hour'].value:02.0f}:00-"
        f"{pc['guide_night_end_hour'].value:02.0f}:00 and the guide's "
        f"{pc['guide_training_cap_w'].value:.0f} W "
        f"training cap, their effect on speed and power from measured sweeps: {setup.curve.source_ref()}; "
        "the curve's median over A40/V100/RTX 6000/P100 is applied to other GPUs by fraction of TDP",
        f"the guide's {pc['guide_inference_cap_w'].value:.0f} W inference cap is not simulated: no sourced "
        "power curve of decoding was found",
        f"GPU failures at {op['hardware_failure_rate_per_month'].value:.2%} per GPU-month "
        f"({op['hardware_failure_rate_per_month'].source}); a hit job loses the work since its checkpoint "
        "and "
        "restarts; repair time of the GPU is not modelled (no source)",
        "serving: replicas = ceil(rate / one replica's capacity at its latency target) + 1 spare, re-set "
        "when the hourly rate changes",
        "queue wait is the time from arrival to first start; KPIs judge the median wait of urgent and "
        "regular training; batch inference waits for idle GPUs by design and development is capped",
    )


def plan_fleet(
    knowledge: Knowledge,
    portfolio: Portfolio,
    efficiency: EfficiencyModel | None = None,
    progress: Any = None,
) -> FleetPlan:
    """Profile every entry, size each GPU type (and a core + edge mix), simulate the cheapest design that
    meets the KPIs for the portfolio's horizon and price it."""
    say = progress or (lambda _msg: None)
    gpus = portfolio.sizing.gpus or SHORTLIST
    gpus = tuple(knowledge.gpu(g).id for g in gpus)
    shapes = {}
    for e in portfolio.workload:
        say(f"profiling {e.name}")
        shapes[e.name] = profile(knowledge, e, gpus, efficiency)
    setup = Setup(knowledge, portfolio, shapes)
    seed = portfolio.sizing.seed
    candidates: list[Candidate] = []
    for g in gpus:
        say(f"sizing {g}")
        c = size_single(setup, g, seed)
        if c is not None:
            candidates.append(c)
    mix = _mix(setup, gpus, seed) if portfolio.sizing.mix else None
    if mix is not None:
        candidates.append(mix)
    if not candidates:
        from advisor.question.errors import InputError

        raise InputError("no design of the GPU types tried meets the KPIs: try other sizing.gpus")
    best = min(candidates, key=lambda c: c.tco_usd)
    say(f"simulating {best.design.label()}")
    weeks, reps = portfolio.sizing.weeks, portfolio.sizing.replications
    runs = setup.run(best.design, weeks, reps, seed)
    return _assemble(setup, best, candidates, runs)


def _mix(setup: Setup, gpus: tuple[str, ...], seed: int) -> Candidate | None:
    """The cheapest training core and the cheapest inference edge, each sized alone, then run together."""
    train, infer = split(setup, inference=False), split(setup, inference=True)
    if not train.portfolio.workload or not infer.portfolio.workload:
        return None
    cores = [c for g in gpus if (c := size_single(train, g, seed)) is not None]
    edges = [c for g in gpus if (c := size_single(infer, g, seed)) is not None]
    if not cores or not edges:
        return None
    core, edge = min(cores, key=lambda c: c.tco_usd), min(edges, key=lambda c: c.tco_usd)
    return size_mix(setup, core, edge, seed)


def _assemble(
    setup: Setup, best: Candidate, candidates: list[Candidate], runs: list[RunFigures]
) -> FleetPlan:
    design, weeks = best.design, setup.portfolio.sizing.weeks
    total = cost(setup, design, runs)
    rows = attribution(setup, design, runs, weeks)
    profile_mean = [statistics.fmean(r.week_profile[h] for r in runs) for h in range(168)]
    return FleetPlan(
        portfolio=setup.portfolio.plain(),
        chosen=design.label(),
        parts=tuple(
            {"name": p.name, "gpu": p.gpu, "gpus": p.gpus, "servers": p.gpus // p.node_size}
            for p in design.parts
        ),
        jobs=_jobs(setup, design),
        options=tuple(
            Option(
                label=c.design.label(),
                gpus=c.design.gpus,
                tco_usd=round(c.tco_usd, 2),
                utilisation=round(c.utilisation, 4),
                chosen=c is best,
            )
            for c in sorted(candidates, key=lambda c: c.tco_usd)
        ),
        kpis=tuple(_kpis(setup, runs)),
        waits=_waits(runs),
        ratio=_ratio(setup, design, runs),
        reserve=_reserve(setup, design),
        week_utilisation=tuple(round(x, 4) for x in profile_mean),
        attribution=tuple(rows),
        cost_by_owner={k: round(v, 2) for k, v in by_owner(rows).items()},
        buying=buying(setup, design, runs, weeks, total),
        tco_usd=round(total, 2),
        weeks=weeks,
        replications=len(runs),
        notes=_notes(setup),
    )
