"""Provides the cluster network: NVLink in a server, a rail-optimised fat tree across servers, thinner links
between pods; collective times (all-reduce, all-gather, all-to-all) for a group placed on it."""

from __future__ import annotations

import math
from dataclasses import dataclass

GBS = 1e9


def ring_allreduce_s(nbytes: float, n: int, gbs: float, latency: float) -> float:
    """Ring all-reduce: 2(n-1)/n of the bytes over the link plus 2(n-1) latency steps."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / (gbs * GBS) + 2.0 * (n - 1) * latency


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Placement:
    """How a group of ranks spreads over the tiers: members per server, servers per pod, pods."""

    per_node: int
    nodes_per_pod: int
    pods: int

    @property
    def size(self) -> int:
        """Ranks in the group."""
        return self.per_node * self.nodes_per_pod * self.pods


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Network:
    """Per-direction bandwidths (GB/s per GPU) and step latencies of each tier."""

    intra_gbs: float
    inter_gbs: float
    node_size: int
    pod_gpus: int
    oversubscription: float
    lat_intra: float
    lat_inter: float

    def place(self, group: int, stride: int) -> Placement:
        """A group of `group` ranks, `stride` ranks apart (Megatron's order: tp innermost, then cp, dp,
        pp)."""
        per_node = max(1, min(group, self.node_size // stride)) if stride < self.node_size else 1
        per_pod = max(per_node, min(group, self.pod_gpus // max(stride, 1)))
        nodes_per_pod = max(1, per_pod // per_node)
        pods = max(1, math.ceil(group / (per_node * nodes_per_pod)))
        if pods == 1:
            nodes_per_pod = max(1, math.ceil(group / per_node))
        return Placement(per_node, nodes_per_pod, pods)

    def allreduce_s(self, nbytes: float, group: int, stride: int = 1) -> float:
        """Hierarchical all-reduce: a ring in each server, then each rank's shard over its rail inside the
        pod, then across pods at the oversubscribed bandwidth (NCCL's tree/ring on multi-NIC servers)."""
        if group <= 1 or nbytes <= 0:
            return 0.0
        p = self.place(group, stride)
        t = ring_allreduce_s(nbytes, p.per_node, self.intra_gbs, self.lat_intra)
        shard = nbytes / p.per_node
        t += ring_allreduce_s(shard, p.nodes_per_pod, self.inter_gbs, self.lat_inter)
        t += ring_allreduce_s(
            shard / p.nodes_per_pod, p.pods, self.inter_gbs / self.oversubscription, self.lat_inter
        )
        return t

    def allgather_s(self, nbytes: float, group: int, stride: int = 1) -> float:
        """All-gather (or reduce-scatter) of `nbytes` in all: half an all-reduce."""
        return self.allreduce_s(nbytes, group, stride) / 2.0

    def alltoall_s(self, nbytes: float, group: int, stride: int = 1) -> float:
        """All-to-all of `nbytes` per rank: each tier carries its share at once; the slowest decides."""
        if group <= 1 or nbytes <= 0:
            return 0.0
        p = self.place(group, stride)
        off_node = (group - p.per_node) / group
        off_pod = (group - p.per_node * p.nodes_per_pod) / group if p.pods > 1 else 0.0
        inside = nbytes * (p.per_node - 1) / group / (self.intra_gbs * GBS)
        rail = nbytes * off_node / (self.inter_gbs * GBS)
        pods = nbytes * off_pod / (self.inter_gbs / self.oversubscription * GBS)
        latency = (self.lat_inter if off_node else self.lat_intra) * math.ceil(math.log2(group))
        return max(inside, rail, pods) + latency

    def p2p_s(self, nbytes: float, across_nodes: bool) -> float:
        """One point-to-point send (pipeline stages)."""
        gbs, lat = (self.inter_gbs, self.lat_inter) if across_nodes else (self.intra_gbs, self.lat_intra)
        return nbytes / (gbs * GBS) + lat
