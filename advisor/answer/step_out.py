"""Provides StepBreakdown: the predicted training step by operation class, each figure with its source and
basis, as a prediction carries it (table, JSON, the UI's results screen)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.physics.step_ops import COMM, StepOps

RESIDUAL = "stack overhead (learned)"


@dataclass(frozen=True, slots=True, repr=False)
class StepPart:
    """One operation class's seconds in the P50 step."""

    op: str
    seconds: float
    share: float
    """Of the P50 step."""
    source: str
    basis: str
    """measured | interpolated | extrapolated | scaled from <gpu> | datasheet fallback | closed form |
    learned."""
    note: str = ""


@dataclass(frozen=True, slots=True, repr=False)
class StepBreakdown:
    """The P50 step: the operations composed from the measured tables, then what the learned residual adds
    (or takes off) for the stack's own overheads and overlap; the parts add up to step_s."""

    step_s: float
    composed_s: float
    exposed_comm_s: float
    slowest_stage: str
    parts: tuple[StepPart, ...]
    notes: tuple[str, ...] = ()


def step_breakdown(ops: StepOps, step_p50_s: float, residual_source: str) -> StepBreakdown:
    """The composed step's parts and the learned residual that takes it to the predicted P50."""
    total = step_p50_s if step_p50_s > 0 else ops.total_s
    parts = [StepPart(p.op, p.seconds, p.seconds / total, p.source, p.basis, p.note) for p in ops.parts]
    residual = total - ops.total_s
    parts.append(
        StepPart(
            RESIDUAL,
            residual,
            residual / total,
            residual_source,
            "learned",
            "P50 step / composed step, fitted on measured runs held out by source",
        )
    )
    exposed = sum(p.seconds for p in ops.parts if p.op in COMM)
    return StepBreakdown(total, ops.total_s, exposed, ops.slowest_stage, tuple(parts), ops.notes)
