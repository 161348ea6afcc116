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
        by_link.setdefault(link.key, (link, []))[1].append(offer)
    if len(by_link) == 1:
        ((link, _),) = by_link.values()
        yield gpu.id, link, offers, None
        return
    node = node_size_for(gpu, offers)
    most = ctx.constraints.max_gpus
    yield gpu.id, None, offers, [c for c in counts_for(node, most) if c <= node]
    for key, (link, sub) in by_link.items():
        size = node_size_for(gpu, sub)
        counts = [c for c in counts_for(size, most) if c > size]
        if counts:
            yield f"{gpu.id}|{key}", link, sub, counts
