"""Provides NCCL's own cost model of a collective (latency per algorithm step plus bytes over bus bandwidth,
the cheapest algorithm and protocol NCCL would pick): what prices a collective outside the measured rows."""

from __future__ import annotations

import math

# NCCL's default tuner constants (NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:src/graph/tuning.cc,
# ncclTunerConstantsDefaults), microseconds. Protocols in the order LL, LL128, Simple.
NCCL_SOURCE = "NVIDIA/nccl@5067397c2676:src/graph/tuning.cc (tuner latencies)"
PROTOCOLS = ("LL", "LL128", "Simple")
BASE_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
"""baseLatencies: a call's fixed cost by algorithm and protocol."""
NVLINK_US = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4)}
"""hwLatencies[NVLINK]: one step between GPUs of a server."""
PCI_US = {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7)}
"""hwLatencies[PCI]: one step between GPUs of a server without NVLink."""
NET_US = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0)}
"""hwLatencies[NET]: one step between servers."""
NET_OVERHEAD_US = 1.0
"""getNetOverhead() on x86 Intel (AMD 2.0), three times for Simple: every step of an inter-node ring pays at
least it."""
LL_MAX_GBS = {2: 39.0, 3: 20.4}
"""llMaxBws for Intel hosts: 2 servers, 3 and more (LL's payload is half of every 16-byte line besides)."""
# Bandwidth refinements of ncclTopoTuneModel (the same file): LL carries half its bytes as flags, LL128
# 120/128 of them; a tree all-reduce runs at 0.92 of the ring's bus bandwidth.
LL_SHARE, LL128_SHARE, TREE_SHARE = 0.5, 0.92, 0.92


def _steps(op: str, ranks: int, nodes: int) -> tuple[int, int]:
    """(steps, of them between servers) of a ring: an all-reduce goes round twice."""
    if op == "all_reduce":
        return 2 * (ranks - 1), (2 * (nodes - 1) if nodes > 1 else 0)
    if op in ("all_gather", "reduce_scatter"):
        return ranks - 1, nodes - 1
    return ranks, nodes if nodes > 1 else 0  # send/recv and all-to-all: NCCL's "others"


def latency_us(op: str, algo: str, proto: int, ranks: int, nodes: int, intra: str = "nvlink") -> float:
    """NCCL's latency of one call (microseconds): base + steps x the latency of each hop (ring), or up and
    down a tree inside the servers and a binary tree across them (all-reduce only)."""
    hops = NVLINK_US if intra == "nvlink" else PCI_US
    ppn = max(1, ranks // max(nodes, 1))
    intra_lat = hops[algo][proto]
    # With one rank a server every hop is exposed: NCCL takes the tree's network latency for the ring too.
    inter_lat = NET_US["tree" if ppn == 1 else algo][proto]
    base = BASE_US[algo][proto]
    if algo == "tree":
        return base + 2.0 * ((ppn - 1) * intra_lat + int(math.log2(max(nodes, 1))) * inter_lat)
    if nodes > 1:
        overhead = NET_OVERHEAD_US * (3.0 if PROTOCOLS[proto] == "Simple" else 1.0)
        intra_lat = max(intra_lat, overhead)
    steps, inter_steps = _steps(op, ranks, nodes)
    return base + (steps - inter_steps) * intra_lat + inter_steps * inter_lat


def _bandwidth(algo: str, proto: int, busbw_gbs: float, nodes: int) -> float:
    if PROTOCOLS[proto] == "LL":
        cap = LL_MAX_GBS[min(max(nodes, 2), 3)]
        return min(busbw_gbs * (LL_SHARE if algo == "ring" else 1.0 / 3.8), cap)
    if PROTOCOLS[proto] == "LL128":
        return busbw_gbs * (LL128_SHARE if algo == "ring" else 120.0 / 128.0)
    return busbw_gbs * (TREE_SHARE if algo == "tree" else 1.0)


def bus_factor(op: str, ranks: int) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n for an all-reduce, (n-1)/n for all-gather, reduce-scatter and
    all-to-all, 1 for send/recv."""
    if op == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    return 1.0 if op == "send_recv" else (ranks - 1) / ranks


def seconds(
    op: str, ranks: int, nodes: int, nbytes: float, busbw_gbs: float, intra: str = "nvlink"
) -> tuple[float, str]:
    """The time of one collective as NCCL's tuner prices it: the cheapest (algorithm, protocol) of latency
    plus the bus bytes over that protocol's share of `busbw_gbs` (the large-message bus bandwidth); with the
    choice it made. Tree is NCCL's all-reduce-only alternative to the ring."""
    if ranks < 2 or nbytes <= 0:
        return 0.0, "none"
    moved = bus_factor(op, ranks) * nbytes
    best, choice = math.inf, ""
    for algo in ("ring", "tree") if op == "all_reduce" and nodes > 1 else ("ring",):
        for proto in range(len(PROTOCOLS)):
            bw = _bandwidth(algo, proto, busbw_gbs, nodes) * 1e9
            t = latency_us(op, algo, proto, ranks, nodes, intra) * 1e-6 + moved / bw
            if t < best:
                best, choice = t, f"{algo}/{PROTOCOLS[proto]}"
    return best, choice


def effective_busbw_gbs(
    op: str, ranks: int, nodes: int, nbytes: float, busbw_gbs: float, intra: str = "nvlink"
) -> float:
    """The bus bandwidth (GB/s, nccl-tests' definition) that seconds() amounts to at this size."""
    t, _ = seconds(op, ranks, nodes, nbytes, busbw_gbs, intra)
    return bus_factor(op, ranks) * nbytes / t / 1e9 if t > 0 else busbw_gbs
