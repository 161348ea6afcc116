"""Provides Design (which GPUs, how many, in which parts) and Setup: a portfolio's jobs on a design, run over
seeded replications."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.loader import Knowledge
from advisor.catalog.power_curve import load_power_curve
from advisor.catalog.tco import load_tco
from advisor.fleet.cluster import Pool
from advisor.fleet.portfolio import CLASS_OF, Entry, Portfolio
from advisor.fleet.power import NightCap
from advisor.fleet.profile import Shape
from advisor.fleet.sim import SERVING, JobSpec, Simulation
from advisor.fleet.stats import Draw, RunFigures, figures

INFERENCE = ("serving", "batch")


@dataclass(frozen=True, slots=True)
class Part:
    """One pool of identical servers."""

    name: str
    gpu: str
    gpus: int
    node_size: int


@dataclass(frozen=True, slots=True)
class Design:
    """A cluster: one pool for everything, or a training core and an inference edge."""

    parts: tuple[Part, ...]

    def label(self) -> str:
        """'h100-sxm x64' or 'core h100-sxm x48 + edge a100-80gb-sxm x16'."""
        if len(self.parts) == 1:
            return f"{self.parts[0].gpu} x{self.parts[0].gpus}"
        return " + ".join(f"{p.name} {p.gpu} x{p.gpus}" for p in self.parts)

    @property
    def gpus(self) -> int:
        """GPUs in all parts."""
        return sum(p.gpus for p in self.parts)


def part_for(entry: Entry, design: Design) -> Part:
    """Where an entry runs: inference on the edge, the rest on the core (or the one pool)."""
    if len(design.parts) == 1:
        return design.parts[0]
    want = "edge" if entry.priority in INFERENCE else "core"
    return next(p for p in design.parts if p.name == want)


class Setup:
    """The portfolio, each entry's shapes on each GPU type, and the sourced figures the runs need."""

    def __init__(self, knowledge: Knowledge, portfolio: Portfolio, shapes: dict[str, dict[str, Shape]]):
        self.knowledge, self.portfolio, self.shapes = knowledge, portfolio, shapes
        t = load_tco(knowledge)
        self.tco_figures = t
        self.hours_per_month = knowledge.assumptions.cost["hours_per_month"].value
        self.failures_per_gpu_hour = (
            t.operations["hardware_failure_rate_per_month"].value / self.hours_per_month
        )
        self.curve = load_power_curve()
        self.pue = t.power["pue"].value
        self.overhead_w = t.power["server_overhead_w_per_gpu"].value

    def fractions(self, gpu_id: str, training: bool) -> tuple[float, float]:
        """Power-limit fractions by day and at night: the guide's training cap (800 W) where it binds, and
        its 90% night cap on top."""
        pc = self.tco_figures.power_cap
        tdp = self.knowledge.gpu(gpu_id).tdp_w or 0
        day = min(1.0, pc["guide_training_cap_w"].value / tdp) if training and tdp else 1.0
        night = day * pc["guide_night_cap_fraction"].value if self.portfolio.policy.night_cap else day
        return day, night

    def night_cap(self, gpu_id: str, training: bool) -> tuple[NightCap, float]:
        """The night window's speed relative to the day, and the day speed relative to no cap (measured)."""
        pc = self.tco_figures.power_cap
        day, night = self.fractions(gpu_id, training)
        day_speed = self.curve.at(day)[0]
        factor = self.curve.at(night)[0] / day_speed
        return NightCap(
            factor, pc["guide_night_start_hour"].value, pc["guide_night_end_hour"].value
        ), day_speed

    def draw(self, part: Part, training: bool) -> Draw:
        """W per busy GPU by day and at night (GPU at its measured relative power + the server's share)."""
        tdp = self.knowledge.gpu(part.gpu).tdp_w or 0
        day, night = self.fractions(part.gpu, training)
        return Draw(
            tdp * self.curve.at(day)[1] + self.overhead_w,
            tdp * self.curve.at(night)[1] + self.overhead_w,
            self.pue,
        )

    def fits(self, design: Design) -> bool:
        """Every entry has a shape on its part's GPU, no larger than the part."""
        for e in self.portfolio.workload:
            part = part_for(e, design)
            shape = self.shapes[e.name].get(part.gpu)
            if shape is None or shape.gpus > part.gpus:
                return False
        return True

    def spec(self, e: Entry, part: Part, day_speed: float) -> JobSpec:
        """One entry as the simulation runs it on `part`."""
        s = self.shapes[e.name][part.gpu]
        if e.serving:
            assert e.requests_per_s is not None
            profile = e.hourly_profile or (1.0,) * 24
            mean = sum(profile) / 24
            rates = tuple(e.requests_per_s * x / mean for x in profile)
            return JobSpec(
                e.name,
                e.owner,
                SERVING,
                part.name,
                s.gpus,
                0.0,
                restart_h=s.restart_h,
                tflop_per_hour=s.tflop_per_hour,
                capacity_rps=s.capacity_rps,
                rate_by_hour=rates,
            )
        batch = e.priority == "batch"
        speed = 1.0 if batch else day_speed
        return JobSpec(
            e.name,
            e.owner,
            CLASS_OF[e.priority],
            part.name,
            s.gpus,
            s.hours / speed,
            per_hour=(e.per_week or 0.0) / 168.0,
            deadline_h=e.deadline_hours,
            interval_h=s.interval_h / speed,
            checkpoint_h=s.checkpoint_h,
            restart_h=s.restart_h,
            keep_progress=batch,
            tflop_per_hour=s.tflop_per_hour * speed,
        )

    def serving_tflop(self, design: Design, hours: float) -> float:
        """FLOPs of the requests served over `hours` (the simulation counts replicas, not requests)."""
        total = 0.0
        for e in self.portfolio.workload:
            if e.serving and e.requests_per_s:
                s = self.shapes[e.name][part_for(e, design).gpu]
                total += e.requests_per_s * hours * s.tflop_per_hour / s.capacity_rps
        return total

    def run(self, design: Design, weeks: float, replications: int, seed: int) -> list[RunFigures]:
        """Seeded replications of the design; each replication's figures."""
        hours = weeks * 168.0
        out = []
        for r in range(replications):
            pools, specs, draws, cap = [], [], {}, NightCap()
            for part in design.parts:
                training = any(
                    part_for(e, design) is part and e.priority not in INFERENCE
                    for e in self.portfolio.workload
                )
                part_cap, day_speed = self.night_cap(part.gpu, training)
                # One night window for the whole cluster, at the first part's (the core's) measured speed.
                cap = part_cap if part is design.parts[0] else cap
                gpu = self.knowledge.gpu(part.gpu)
                pools.append(
                    Pool(part.name, part.gpu, part.node_size, part.gpus // part.node_size, gpu.tdp_w or 0)
                )
                draws[part.name] = self.draw(part, training)
                specs += [
                    self.spec(e, part, day_speed)
                    for e in self.portfolio.workload
                    if part_for(e, design) is part
                ]
            sim = Simulation(
                pools,
                specs,
                seed=seed * 1000 + r,
                hours=hours,
                cap=cap,
                failures_per_gpu_hour=self.failures_per_gpu_hour,
                dev_cap_fraction=self.portfolio.policy.dev_cap_fraction,
            )
            out.append(figures(sim.run(), draws, self.serving_tflop(design, hours), self.hours_per_month))
        return out

    def mean_load(self, design: Design) -> float:
        """GPUs busy on average by arithmetic alone (arrivals x GPUs x hours; serving replicas)."""
        load = 0.0
        for e in self.portfolio.workload:
            part = part_for(e, design)
            s = self.shapes[e.name][part.gpu]
            if e.serving and e.requests_per_s:
                profile = e.hourly_profile or (1.0,) * 24
                mean = sum(profile) / 24
                load += (
                    s.gpus
                    * sum(math.ceil(e.requests_per_s * x / mean / s.capacity_rps) + 1 for x in profile)
                    / 24
                )
            else:
                load += (e.per_week or 0.0) / 168.0 * s.gpus * s.hours
        return load
