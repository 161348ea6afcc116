"""Provides with_caveats(): what to check before believing a plan, added to its reasons: capacity that is not
modelled, a micro-batch taken from a speed benchmark, a service without a spare replica, and the fabric
assumed between separate instances."""

from __future__ import annotations

import dataclasses

from advisor.answer.report import PlanOut
from advisor.search.context import Context

MANY_INSTANCES = 8
"""Above this many instances from one provider at once, a plan says that availability is not modelled. A
design threshold for when to say so, not a capacity figure: no stored source gives providers' on-demand
capacity or account quotas (providers list prices; capacity and quotas are per account and per day)."""


def with_caveats(ctx: Context, plan: PlanOut) -> PlanOut:
    """The plan with a 'check: ...' reason for each thing a user should confirm before relying on it."""
    checks = [
        c
        for c in (_capacity(plan), _batch(ctx, plan), _redundancy(plan), _fabric(ctx, plan))
        if c is not None
    ]
    if not checks:
        return plan
    return dataclasses.replace(plan, reasons=plan.reasons + tuple(f"check: {c}" for c in checks))


def _capacity(plan: PlanOut) -> str | None:
    price = plan.price
    if price is None or price.instances <= MANY_INSTANCES:
        return None
    return (
        f"{price.instances:,} {price.pricing} {price.instance} instances ({plan.count:,} GPUs) from "
        f"{price.provider} at once: availability is not modelled (the catalogue holds prices, not capacity "
        "or account quotas); confirm the provider can rent this many before planning on it"
    )


def _batch(ctx: Context, plan: PlanOut) -> str | None:
    """A micro-batch taken from a benchmark's run (non-LLM training, the user gave no batch)."""
    job = ctx.job
    if not job.training or job.batch_size or job.global_batch_seqs:
        return None
    measured = ctx.default_batch(ctx.knowledge.gpu(plan.gpu), plan.precision)
    mb = plan.layout.micro_batch
    if measured is None or mb != measured:
        return None
    return (
        f"micro-batch {mb:,} per GPU is the batch the benchmark's throughput runs used on this GPU (or the "
        f"nearest in memory): it measures speed, and a recipe tuned for accuracy may use less per GPU, "
        f"at a lower speed; global batch {mb * plan.layout.dp * plan.layout.grad_accum:,} "
        "(state a micro-batch to change it)"
    )


def _redundancy(plan: PlanOut) -> str | None:
    """A service that stops, or overloads, when one replica fails."""
    s = plan.serving
    if s is None or s.replicas < 1:
        return None
    per_replica = s.capacity_rps / s.replicas
    if (s.replicas - 1) * per_replica >= s.load_rps:
        return None  # one replica can fail and the rest still carry the load
    what = "one replica" if s.replicas == 1 else f"{s.replicas} replicas, none spare"
    return (
        f"{what}: a failure, a restart or an upgrade {'stops' if s.replicas == 1 else 'overloads'} the "
        f"service; N+1 ({s.replicas + 1} replicas) costs about ${plan.cost_usd.mid / s.replicas:,.0f} more a "
        "month"
    )


def _fabric(ctx: Context, plan: PlanOut) -> str | None:
    """The network assumed between a plan's instances, when the price catalogue cannot say it."""
    price = plan.price
    crosses = ctx.job.training or plan.layout.pp > 1
    if price is None or price.instances < 2 or not crosses or ctx.constraints.fabric is not None:
        return None
    fabric = ctx.fabric(ctx.knowledge.gpu(plan.gpu))
    return (
        f"{price.instances:,} separate {price.instance} instances, timed as linked by {fabric.name}, the "
        f"default for {plan.gpu}: the price catalogue does not say how {price.provider} links them; confirm "
        "it, or state the fabric they have"
    )
