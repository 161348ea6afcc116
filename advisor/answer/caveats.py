"""Provides with_caveats(): what to check before believing a plan, added to its reasons: the capacity and
reservation its provider documents (or that none is stored), a micro-batch taken from a speed benchmark, a
service without a spare replica, and the network its separate instances are timed on, with its source."""

from __future__ import annotations

import dataclasses
import math

from advisor.answer.report import PlanOut
from advisor.catalog.capacity import (
    ProviderCapacity,
    link_for,
    provider_capacity,
    source_ref,
    undocumented,
)
from advisor.search.context import Context

MANY_INSTANCES = 8
"""Above this many instances from one provider at once, a plan says what the provider documents about
capacity (knowledge/capacity.toml) and the reservation it needs. A design threshold for when to say so, not a
capacity figure: no stored source gives providers' on-demand capacity (quotas are per account and per day)."""


def with_caveats(ctx: Context, plan: PlanOut) -> PlanOut:
    """The plan with its documented network, and a 'check: ...' reason for each thing a user should confirm
    before relying on it."""
    checks = [
        c
        for c in (_capacity(ctx, plan), _batch(ctx, plan), _redundancy(plan), _fabric(ctx, plan))
        if c is not None
    ]
    facts = [r for r in (capacity_reason(ctx, plan), network_reason(ctx, plan)) if r is not None]
    added = tuple(facts) + tuple(f"check: {c}" for c in checks)
    if not added:
        return plan
    return dataclasses.replace(plan, reasons=plan.reasons + added)


def _capacity(ctx: Context, plan: PlanOut) -> str | None:
    """Many instances at once: what the provider documents about on-demand capacity and reservations
    (knowledge/capacity.toml), or that nothing is stored."""
    price = plan.price
    if price is None or price.instances <= MANY_INSTANCES:
        return None
    head = (
        f"{price.instances:,} {price.pricing} {price.instance} instances ({plan.count:,} GPUs) from "
        f"{price.provider}"
    )
    cap = provider_capacity(ctx.knowledge, price.provider)
    if cap is None:
        return (
            f"{head} at once: availability is not modelled (no capacity or quota of {price.provider} is "
            "stored; the catalogue holds prices); confirm the provider can rent this many before planning on "
            "it"
        )
    where = source_ref(ctx.knowledge, cap.source)
    text = f"{head} at once: {cap.on_demand} ({where}); {reservation_text(cap, plan)}"
    offered = not cap.reservation_gpus or plan.gpu in cap.reservation_gpus
    return text + (f"; {cap.note}" if cap.note and offered else "")


def capacity_reason(ctx: Context, plan: PlanOut) -> str | None:
    """A cloud plan of a few instances: what its provider documents about getting them, with the source (many
    instances say it in their check instead)."""
    price = plan.price
    if price is None or price.instances > MANY_INSTANCES:
        return None
    cap = provider_capacity(ctx.knowledge, price.provider)
    if cap is None:
        return f"capacity: nothing stored about {price.provider}'s capacity or quotas (not modelled)"
    return f"capacity: {cap.on_demand} ({source_ref(ctx.knowledge, cap.source)})"


def reservation_text(cap: ProviderCapacity, plan: PlanOut) -> str:
    """The reservation a plan this large needs, with its term, or that it exceeds what is documented."""
    if not cap.reservation:
        return "no reservation product is stored for this provider: confirm capacity with it"
    if cap.reservation_gpus and plan.gpu not in cap.reservation_gpus:
        return (
            f"its documented reservation ({cap.reservation}) offers {', '.join(cap.reservation_gpus)} only: "
            f"confirm it can hold {plan.count:,} {plan.gpu} at once"
        )
    price = plan.price
    assert price is not None
    days = max(1, math.ceil(plan.hours.p90 / 24.0))
    too_many = (cap.reservation_max_gpus is not None and plan.count > cap.reservation_max_gpus) or (
        cap.reservation_max_instances is not None and price.instances > cap.reservation_max_instances
    )
    size = (
        f"{cap.reservation_min_gpus or 1}-{cap.reservation_max_gpus:,} GPUs"
        if cap.reservation_max_gpus
        else f"up to {cap.reservation_max_instances} instances a block"
    )
    term = f"{cap.reservation_min_days:g}-{cap.reservation_max_days:g} days"
    fabric = f", {cap.reservation_fabric}" if cap.reservation_fabric else ""
    if too_many:
        return (
            f"needs a reservation beyond the largest {cap.reservation} documented ({size}{fabric}): a "
            f"private contract, or fewer GPUs"
        )
    held = max(days, int(cap.reservation_min_days or 1))
    return (
        f"to hold them together, reserve them: {cap.reservation} ({size}, terms of {term}{fabric}); this "
        f"job's P90 needs {days} day(s), billed for at least {held} (the reservation's price is not stored: "
        "ask for a quote)"
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
    """The network a plan's separate instances are timed on, and where that comes from."""
    price = plan.price
    crosses = ctx.job.training or plan.layout.pp > 1
    if price is None or price.instances < 2 or not crosses or ctx.constraints.fabric is not None:
        return None
    gpu = ctx.knowledge.gpu(plan.gpu)
    link = link_for(ctx.knowledge, price.provider, price.instance)
    fabric = ctx.fabric(gpu, link or undocumented(price.provider))
    many = f"{price.instances:,} separate {price.instance} instances"
    if link is None:
        return (
            f"{many}, timed as linked by {fabric.name}, with model parallelism kept inside each instance: "
            f"nothing stored says how {price.provider} links them (no RDMA fabric is assumed); state the "
            "fabric they have if it is faster"
        )
    where = source_ref(ctx.knowledge, link.source)
    if link.gbps is not None:
        return None  # documented: said as a reason, not a check (network_reason)
    if link.rdma:
        return (
            f"{many}: {price.provider} documents {link.name} ({where}); timed as {fabric.name}, the default "
            f"for {plan.gpu}, as no bandwidth is stored: confirm it"
        )
    return (
        f"{many}: {price.provider} documents {link.name} ({where}); timed on {fabric.name}, with model "
        "parallelism kept inside each instance: confirm the bandwidth"
    )


def network_reason(ctx: Context, plan: PlanOut) -> str | None:
    """A plan timed on the bandwidth its provider documents between its instances: which, and the source."""
    price = plan.price
    if price is None or price.instances < 2 or ctx.constraints.fabric is not None:
        return None
    link = link_for(ctx.knowledge, price.provider, price.instance)
    if link is None or link.gbps is None:
        return None
    where = source_ref(ctx.knowledge, link.source)
    rdma = "" if link.rdma else "; no RDMA, so model parallelism stays inside each instance"

    return (
        f"network: {price.instances:,} {price.instance} instances timed on {link.name}, as {price.provider} "
        f"documents ({where}){rdma}"
    )
