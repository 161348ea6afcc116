"""Provides Pool: the GPUs of one cluster part, node by node, with gang allocation of whole jobs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Pool:
    """A set of identical servers. A job of at most one server's GPUs takes them on one server (best fit);
    a larger one takes whole free servers, all at once (gang scheduling), or waits."""

    name: str
    gpu: str
    node_size: int
    nodes: int
    tdp_w: float = 0.0
    free: list[int] = field(default_factory=list)
    busy: int = 0
    """GPUs allocated now."""
    capacity: list[int] = field(default_factory=list)
    """GPUs of each server where they differ (a replayed trace's nodes); else node_size each."""

    def __post_init__(self) -> None:
        if not self.capacity:
            self.capacity = [self.node_size] * self.nodes
        if not self.free:
            self.free = list(self.capacity)

    @property
    def total(self) -> int:
        """GPUs in the pool."""
        return sum(self.capacity)

    def fit(self, gpus: int, free: list[int] | None = None) -> list[tuple[int, int]] | None:
        """Where `gpus` would go ((node, GPUs) pairs), or None when they cannot be placed now."""
        free = self.free if free is None else free
        if gpus <= self.node_size:
            best = -1
            for i, f in enumerate(free):
                if f >= gpus and (best < 0 or f < free[best]):
                    best = i
                    if f == gpus:
                        break
            return [(best, gpus)] if best >= 0 else None
        whole = -(-gpus // self.node_size)
        empty = [i for i, f in enumerate(free) if f == self.node_size]
        if len(empty) < whole:
            return None
        rest, out = gpus, []
        for i in empty[:whole]:
            take = min(rest, self.node_size)
            out.append((i, take))
            rest -= take
        return out

    def take(self, alloc: list[tuple[int, int]]) -> None:
        """Allocate."""
        for node, n in alloc:
            self.free[node] -= n
            self.busy += n

    def give(self, alloc: list[tuple[int, int]]) -> None:
        """Release."""
        for node, n in alloc:
            self.free[node] += n
            self.busy -= n
