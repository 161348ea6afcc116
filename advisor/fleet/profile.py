"""Provides each portfolio entry on each GPU type, from the per-job model: GPUs, hours, checkpoints, FLOPs.

The fleet planner has no physics of its own: every figure here comes from `advisor.answer.recommend`'s search
(the same memory check, layout search, efficiency model and goodput) run for the entry's workload."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from advisor.answer.recommend import Scored, Search, run_search
from advisor.catalog.loader import Knowledge
from advisor.fleet.portfolio import Entry
from advisor.job.inputs import Constraints, Workload
from advisor.learned.efficiency import EfficiencyModel
from advisor.physics.speed import peak_flops
from advisor.question.errors import InputError
from advisor.question.fields import DEFAULT_MAX_GPUS

BATCH_TPOT_MS = 1000.0
"""Batch inference has no interactive latency target: the search may use its largest batch (1 s a token)."""


@dataclass(frozen=True, slots=True)
class Shape:
    """One entry on one GPU type: what a job (or a serving replica) needs and how long it runs."""

    entry: str
    gpu: str
    gpus: int
    """GPUs per job, or per serving replica."""
    node_size: int
    hours: float
    """Training and batch: P50 hours of useful work at full power, without interruptions."""
    hours_p90: float
    checkpoint_h: float
    """Time to write one checkpoint (0 for stateless work)."""
    interval_h: float
    """Work between checkpoints (Daly's optimum from the goodput model; inf when none is kept)."""
    restart_h: float
    tflop_per_hour: float
    """Hardware FLOPs (in TFLOP) the job does per hour at full power."""
    capacity_rps: float = 0.0
    """Serving: requests per second one replica sustains at its latency target."""
    layout: str = ""
    fits_turnaround: bool = True

    @property
    def gpu_hours(self) -> float:
        """GPU-hours of one job at full power."""
        return self.hours * self.gpus


def _workload(entry: Entry) -> Workload:
    w = entry.workload
    if entry.priority == "batch" and w.kind == "inference":
        return dataclasses.replace(w, tpot_ms=w.tpot_ms or BATCH_TPOT_MS)
    return w


def _search(
    knowledge: Knowledge, entry: Entry, gpus: tuple[str, ...], model: EfficiencyModel | None
) -> Search:
    constraints = Constraints(deployment="on-prem", gpus=gpus, max_gpus=entry.gpus or DEFAULT_MAX_GPUS, top=1)
    try:
        return run_search(knowledge, _workload(entry), constraints, model)
    except InputError as exc:
        raise InputError(f"workload {entry.name!r}: {exc}") from None


def _training_shape(entry: Entry, gpu_id: str, options: list[Scored]) -> Shape | None:
    if entry.gpus is not None:
        options = [s for s in options if s.cand.layout.count == entry.gpus]
    if not options:
        return None
    options.sort(key=lambda s: (s.cand.layout.count, s.hours.p50))
    # A deadline is met at the model's P90 hours (as recommend filters plans); a turnaround at its P50.
    if entry.deadline_hours is not None:
        within = [s for s in options if s.hours.p90 <= entry.deadline_hours]
    else:
        within = [s for s in options if s.hours.p50 <= entry.turnaround_hours]
    best = within[0] if within else min(options, key=lambda s: s.hours.p50)
    lay, good = best.cand.layout, best.goodput
    useful = best.hours.p50 * (good.fraction if good else 1.0)
    step = best.cand.step
    tflop = 0.0
    if step is not None:
        peak = peak_flops(best.cand.gpu, lay.precision) or 0.0
        flops_per_item = step.flops_s * peak * lay.count / step.items
        tflop = flops_per_item * best.throughput.p50 * 3600.0 / 1e12
    return Shape(
        entry=entry.name,
        gpu=gpu_id,
        gpus=lay.count,
        node_size=lay.node_size,
        hours=useful,
        hours_p90=best.hours.p90,
        checkpoint_h=(good.checkpoint_s / 3600.0) if good else 0.0,
        interval_h=good.interval_h if good else math.inf,
        restart_h=good.restart_h if good else 0.0,
        tflop_per_hour=tflop,
        layout=lay.label(),
        fits_turnaround=bool(within),
    )


def _serving_shape(knowledge: Knowledge, entry: Entry, gpu_id: str, options: list[Scored]) -> Shape | None:
    """The replica shape with the most requests per second per GPU; batch jobs: hours for their requests."""
    if not options:
        return None
    best = max(options, key=lambda s: s.capacity_rps / s.cand.layout.count)
    lay = best.cand.layout
    per_replica = best.capacity_rps / lay.dp
    gpus = lay.count // lay.dp
    w = entry.workload
    params = knowledge.model(w.model).params if w.model else (w.params or 0.0)
    tokens = (w.prompt_tokens or 512) + (w.output_tokens or 256)
    tflop_per_request = 2.0 * params * tokens / 1e12
    hours = (entry.requests or 0.0) / (per_replica * 3600.0) / 1 if entry.requests else 0.0
    return Shape(
        entry=entry.name,
        gpu=gpu_id,
        gpus=gpus,
        node_size=lay.node_size,
        hours=hours,
        hours_p90=hours,
        checkpoint_h=0.0,
        interval_h=math.inf,
        restart_h=knowledge.assumptions.goodput["restart_h"].value,
        tflop_per_hour=tflop_per_request * per_replica * 3600.0,
        capacity_rps=per_replica,
        layout=lay.serving_label(),
        fits_turnaround=entry.deadline_hours is None or hours <= entry.deadline_hours,
    )


def profile(
    knowledge: Knowledge, entry: Entry, gpus: tuple[str, ...], model: EfficiencyModel | None = None
) -> dict[str, Shape]:
    """The entry on each GPU type where it fits (a GPU where nothing fits is left out)."""
    search = _search(knowledge, entry, gpus, model)
    by_gpu: dict[str, list[Scored]] = {g: [] for g in gpus}
    for s in search.feasible:
        by_gpu.setdefault(s.cand.gpu.id, []).append(s)
    out: dict[str, Shape] = {}
    for gpu_id, options in by_gpu.items():
        if search.ctx.job.training:
            shape = _training_shape(entry, gpu_id, options)
        else:
            shape = _serving_shape(knowledge, entry, gpu_id, options)
        if shape is not None:
            out[gpu_id] = shape
    return out
