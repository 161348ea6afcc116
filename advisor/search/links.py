"""Provides offer_groups(): a GPU's offers split by the network their separate instances have, so that each
multi-instance plan is timed on the fabric its provider documents (knowledge/capacity.toml)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

from advisor.catalog.capacity import Link, link_of, undocumented
from advisor.catalog.gpus import Gpu
from advisor.catalog.prices import Offer
from advisor.search.candidates import counts_for
from advisor.search.context import Context
from advisor.search.cost import node_size_for

Group = tuple[str, Link | None, list[Offer], list[int] | None]
"""An offer group's key, its documented link, its offers, and the counts to search on it (None: all)."""


def with_link(ctx: Context, link: Link | None) -> Context:
    """The context for plans on offers with this link (the same context when it has it already)."""
    if link is ctx.link:
        return ctx
    linked = copy.copy(ctx)
    linked.link = link
    return linked


def offer_groups(ctx: Context, gpu: Gpu, offers: list[Offer]) -> Iterator[Group]:
    """The searches to run for one GPU: one, on every offer, when all its offers share one link (or this is
    not a cloud training plan); else the single-instance counts on every offer (no network between
    instances), then each link's multi-instance counts on its own offers."""
    if not offers or not ctx.job.training or ctx.constraints.fabric is not None:
        yield gpu.id, None, offers, None
        return
    by_link: dict[str, tuple[Link | None, list[Offer]]] = {}
    for offer in offers:
        link = link_of(ctx.knowledge, offer) or undocumented(offer.provider)
        # Links that time a plan alike (the same fabric, RDMA or not) are one search; pricing then picks the
        # cheapest of their offers for each count.
        fabric = ctx.fabric(gpu, link)
        key = f"{ctx.rdma(link)}|{fabric.name}|{fabric.gbps:g}/{fabric.per}|{fabric.latency_s:g}"
        by_link.setdefault(key, (link, []))[1].append(offer)
    if len(by_link) == 1:
        ((only, _),) = by_link.values()
        yield gpu.id, only, offers, None
        return
    node = node_size_for(gpu, offers)
    most = ctx.constraints.max_gpus
    yield gpu.id, None, offers, [c for c in counts_for(node, most) if c <= node]
    merits = {key: _merit(ctx, gpu, group_link, sub) for key, (group_link, sub) in by_link.items()}
    for key, (group_link, sub) in by_link.items():
        if any(k != key and _dominates(merits[k], merits[key]) for k in merits):
            continue  # another group times every plan as fast or faster and prices it no dearer
        size = node_size_for(gpu, sub)
        counts = [c for c in counts_for(size, most) if c > size]
        if counts:
            yield f"{gpu.id}|{key}", group_link, sub, counts


Merit = tuple[int, bool, float, float, float]
"""A group's server size, RDMA, bandwidth per GPU, step latency and cheapest $/GPU-hour of a whole server."""


def _merit(ctx: Context, gpu: Gpu, link: Link | None, offers: list[Offer]) -> Merit:
    size = node_size_for(gpu, offers)
    fabric = ctx.fabric(gpu, link)
    whole = [o.usd_per_gpu_hour for o in offers if o.gpus == size] or [o.usd_per_gpu_hour for o in offers]
    return size, ctx.rdma(link), fabric.gbs_per_gpu(size), fabric.latency_s, min(whole)


def _dominates(a: Merit, b: Merit) -> bool:
    """Whether group a's plans are timed no slower and priced no dearer than group b's, for every count (same
    server size; where both are equal, the first listed is kept)."""
    same = a == b
    better = a[0] == b[0] and a[1] >= b[1] and a[2] >= b[2] and a[3] <= b[3] and a[4] <= b[4]
    return better and not same
