"""Provides DeepEP's measured dispatch and combine bandwidths (knowledge/operations/ep_dispatch.csv) and the
servers or ranks a routed token reaches, for pricing an expert-parallel exchange by the dispatcher that runs
it."""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, repr=False)
class DispatchRate:
    """One measured bottleneck bandwidth (GB/s) of a dispatcher's pass, and the link's maximum it ran on."""

    ep: int
    nodes: int
    link_max_gbs: float
    gbs: float
    source: str


@functools.cache
def _rows() -> tuple[tuple[str, str, DispatchRate], ...]:
    from advisor.catalog.common import shipped_root

    text = shipped_root().joinpath("operations", "ep_dispatch.csv").read_text(encoding="utf-8")
    out = []
    for row in csv.DictReader(text.splitlines()):
        rate = DispatchRate(
            int(row["ep"]),
            int(row["nodes"]),
            float(row["link_max_gbs"]),
            float(row["bottleneck_gbs"]),
            row["source"],
        )
        out.append((row["kernel"], row["pass"], rate))
    return tuple(out)


def dispatch_rate(kernel: str, pass_: str, ep: int, across_nodes: bool) -> DispatchRate:
    """The measured row for an exchange over `ep` ranks: inside one server the intranode row; across servers
    the row of the largest measured EP not above `ep` (the smallest where `ep` is below every row)."""
    rows = [r for k, p, r in _rows() if k == kernel and p == pass_ and (r.nodes > 1) == across_nodes]
    below = [r for r in rows if r.ep <= ep]
    return max(below, key=lambda r: r.ep) if below else min(rows, key=lambda r: r.ep)


def destinations(experts: int, top_k: int, groups: int) -> float:
    """Expected distinct groups (servers, or ranks) a token's top_k experts fall in, its experts spread evenly
    over `groups` and chosen uniformly: groups x (1 - C(E - E/g, k) / C(E, k))."""
    if groups <= 1:
        return 1.0
    per = experts // groups
    k = min(top_k, experts)
    if experts - per < k:
        return float(groups)
    miss = math.comb(experts - per, k) / math.comb(experts, k)
    return groups * (1.0 - miss)
