"""Provides PlanFacts: the plain values of one plan that operations planning and launch files read.

The answer's report embeds the operations plan and the launch artefacts, so ops/ cannot import the report's
PlanOut without an import circle; the answer passes these plain values down instead."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class PlanFacts:
    """One plan as operations see it: hardware, layout, where it runs, and how long."""

    gpu: str
    count: int
    nodes: int
    precision: str
    tp: int
    pp: int
    dp: int
    sharding: str
    recompute: str
    micro_batch: int
    grad_accum: int
    hours_p50: float
    """Training: time to finish. Inference: hours billed per month of service."""
    step_s_p50: float | None = None
    provider: str | None = None
    instance: str | None = None
    instances: int | None = None
    replicas: int | None = None
    """Serving only: replicas of the model."""
    gpus_per_replica: int | None = None
    engine: str | None = None
    """Serving only: the engine the launch file starts."""
    cp: int = 1
    ep: int = 1
    """Expert-parallel ranks (folded over the tensor-parallel ranks where they do not divide CP x DP)."""
    virtual: int = 1
    recompute_modules: tuple[str, ...] = ()
    """Megatron-Core's recompute modules the plan recomputes (selective), when the user stated them."""
    """Interleaved pipeline: model chunks per pipeline rank (1: plain 1F1B)."""
    moe_dispatcher: str = "alltoall"
    """The MoE token dispatcher the step priced (alltoall, allgather, deepep)."""
