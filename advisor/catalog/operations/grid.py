"""Provides Grid: measured points over positive axes, interpolated multilinearly in log space, with unmeasured
points of the axes' product filled from their nearest measured neighbours; the spreads each basis carries."""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

# Extra relative uncertainty by how far an answer is from its own GPU's measured grid. Outside the grid each
# doubling beyond its edge adds EXTRA_PER_DOUBLING (an achieved rate curve bends most near its edges); a rate
# scaled from another GPU of the architecture keeps that GPU's shape but not its clocks, power limit or
# memory (H100 SXM vs PCIe differ by 15-30% beyond the peak ratio); the datasheet fallback knows neither.
EXTRAPOLATED_SPREAD = 0.10
EXTRA_PER_DOUBLING = 0.05
MAX_SPREAD = 1.0
SCALED_SPREAD = 0.15
FALLBACK_SPREAD = 0.30
PROXY_HEADS_SPREAD = 0.05
"""A measured attention row of another head configuration (nearest head_dim, GQA ratio, heads)."""


# --- interpolation ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, repr=False)
class Grid:
    """Measured points over positive axes: multilinear interpolation in log space (sizes and values). A
    point of the axes' product that no row measured holds its nearest measured neighbour's value, and an
    answer leaning on one is extrapolated."""

    axes: tuple[tuple[float, ...], ...]
    points: dict[tuple[float, ...], float]
    """Measured points (the mean where several rows measured one)."""
    logs: dict[tuple[float, ...], float]
    """log(value) at every point of the axes' product, the unmeasured ones filled."""
    source: str
    below: tuple[float, ...]
    """Per axis, how the value scales below the grid's first point: 0 holds it, 1 keeps the time of that
    point (a GEMM below its smallest measured m, n or k is latency-bound: its rate falls with its size)."""

    @classmethod
    def of(cls, points: dict[tuple[float, ...], list[float]], source: str, below: Sequence[float]) -> Grid:
        import statistics  # on use: a warm command reads the stored grids, built on a cache miss

        dims = len(next(iter(points)))
        axes = tuple(tuple(sorted({p[i] for p in points})) for i in range(dims))
        merged = {p: statistics.fmean(v) for p, v in points.items()}
        logs = _filled(axes, {p: math.log(v) for p, v in merged.items()})
        return cls(axes, merged, logs, source, tuple(below))

    def at(self, query: Sequence[float]) -> tuple[float, str, float]:
        """(value, basis, spread) at a point."""
        scale, doublings, clamped = 1.0, 0.0, []
        for axis, q, below in zip(self.axes, query, self.below, strict=True):
            lo, hi = axis[0], axis[-1]
            c = min(max(q, lo), hi)
            if q != c:
                doublings += abs(math.log2(q / c))
                if q < lo:
                    scale *= (q / lo) ** below
            clamped.append(c)
        value, exact, filled = self._inside(tuple(clamped))
        if doublings > 0 or filled:
            spread = min(MAX_SPREAD, EXTRAPOLATED_SPREAD + EXTRA_PER_DOUBLING * doublings)
            return value * scale, "extrapolated", spread
        return value, ("measured" if exact else "interpolated"), 0.0

    def _inside(self, q: tuple[float, ...]) -> tuple[float, bool, bool]:
        """(value, a measured point, leans on an unmeasured point) inside the axes."""
        exact = self.points.get(q)
        if exact is not None:
            return exact, True, False
        acc, filled = 0.0, False
        for corner, w in _corners([_bracket(axis, x) for axis, x in zip(self.axes, q, strict=True)]):
            if w > 0:
                acc += w * self.logs[corner]
                filled = filled or corner not in self.points
        return math.exp(acc), False, filled


def _filled(
    axes: tuple[tuple[float, ...], ...], logs: dict[tuple[float, ...], float]
) -> dict[tuple[float, ...], float]:
    """Every point of the axes' product: a missing one takes the value of the nearest measured point along
    one axis (axis by axis, so a whole missing line takes its neighbour line's), else the nearest overall."""
    out = dict(logs)
    missing = [p for p in itertools.product(*axes) if p not in out]
    for _ in range(len(axes)):
        if not missing:
            break
        for d, axis in enumerate(axes):
            still = []
            for p in missing:
                line = [(abs(math.log(x / p[d])), (*p[:d], x, *p[d + 1 :])) for x in axis]
                near = min(((dist, q) for dist, q in line if q in out), default=None)
                if near is None:
                    still.append(p)
                else:
                    out[p] = out[near[1]]
            missing = still
    for p in missing:
        out[p] = logs[min(logs, key=functools.partial(_log_distance, p))]
    return out


def _log_distance(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum(math.log(x / y) ** 2 for x, y in zip(a, b, strict=True))


def _bracket(axis: tuple[float, ...], x: float) -> tuple[float, float, float]:
    """(lower, upper, weight of upper) in log space; x is inside the axis."""
    i = bisect.bisect_left(axis, x)
    if i < len(axis) and axis[i] == x:
        return axis[i], axis[i], 0.0
    lo, hi = axis[i - 1], axis[i]
    return lo, hi, math.log(x / lo) / math.log(hi / lo)


def _corners(brackets: list[tuple[float, float, float]]) -> list[tuple[tuple[float, ...], float]]:
    out: list[tuple[tuple[float, ...], float]] = [((), 1.0)]
    for lo, hi, t in brackets:
        step = [((*c, lo), w * (1 - t)) for c, w in out]
        if hi != lo:
            step += [((*c, hi), w * t) for c, w in out]
        out = step
    return out
