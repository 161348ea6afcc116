"""Provides the calibration multiplier: a Gaussian-process posterior of log(measured / predicted) at a
configuration, given the user's runs at theirs.

The log ratio at configuration x is b + e(x): b is what the user's cluster and software do to every run
(prior spread TAU), e(x) what is particular to one configuration (prior spread SPREAD, correlated between
configurations as exp(-d^2/2) of their distance d), and each run is measured with noise NOISE. With one run
the same configuration gets nearly all of its ratio (TAU^2 + SPREAD^2 over that plus NOISE^2), a far one only
TAU^2's share, and the posterior spread widens the interval as the distance grows. From three runs on, their
own spread replaces SPREAD's prior (pooled with it, as a prior worth PRIOR_DOF runs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Fitted by benchmarks/bench_calibration.py (highest marginal likelihood over the published runs, each
# source x GPU x stack, or serving deployment, standing for one user; re-run it when the base model changes):
# what every run of a user shares (TAU) and what one configuration adds (SPREAD). NOISE is the run-to-run
# repeatability of a user's reruns (a few percent). TPOT has no published median at a concurrency to fit on:
# it takes throughput's.
TAU = {"training": 0.25, "throughput": 0.05, "ttft": 0.5, "tpot": 0.05}
SPREAD = {"training": 0.4, "throughput": 0.3, "ttft": 0.8, "tpot": 0.3}
LENGTH = {"training": 1.0, "throughput": 0.5, "ttft": 0.25, "tpot": 0.5}
"""Each metric's correlation length, in units of the scales below."""
NOISE = 0.02
PRIOR_DOF = 2.0
FAR = math.log(2.0)
"""A run measured more than 2x from (or under half of) the base prediction is flagged before it is trusted."""
Z90 = 1.2816

# Length scales of the configuration distance: one unit is a 4x change in model size, sequence or tensor
# shape, an 8x change in GPU count or concurrency, a different recomputation or precision.
TRAINING_SCALES = {
    "log_params": math.log(4),
    "log_seq": math.log(4),
    "log_count": math.log(8),
    "log_tp": math.log(4),
    "log_pp": math.log(4),
    "log_cp": math.log(4),
    "log_ep": math.log(4),
    "log_micro_tokens": math.log(4),
    "zero": 2.0,
    "recompute": 1.0,
    "fp8": 1.0,
    "kind": 1.0,
}
SERVING_SCALES = {
    "log_params": math.log(4),
    "log_count": math.log(8),
    "log_tp": math.log(4),
    "log_load": math.log(8),
    "log_prompt": math.log(4),
    "log_output": math.log(4),
    "fp8": 1.0,
}


@dataclass(frozen=True, slots=True)
class Correction:
    """The multiplier at one configuration: exp(log_mean), its posterior spread in log, and how many runs
    (and how near) stand behind it."""

    log_mean: float
    log_sd: float
    runs: int
    nearest: float
    """The distance to the nearest run (0: the same configuration)."""

    @property
    def factor(self) -> float:
        """The multiplier on the base prediction."""
        return math.exp(self.log_mean)


def distance(a: Mapping[str, float], b: Mapping[str, float], scales: Mapping[str, float]) -> float:
    """The scaled Euclidean distance of two configurations over the features both have."""
    return math.sqrt(sum(((a[k] - b[k]) / s) ** 2 for k, s in scales.items() if k in a and k in b))


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """matrix x = rhs by Gaussian elimination with partial pivoting (small, positive definite)."""
    n = len(rhs)
    a = [[*row, rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= f * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def spread_of(ratios: Sequence[float], metric: str) -> float:
    """SPREAD's prior pooled with the runs' own spread around their mean (from three runs on)."""
    prior = SPREAD[metric]
    n = len(ratios)
    if n < 3:
        return prior
    mean = sum(ratios) / n
    ss = sum((r - mean) ** 2 for r in ratios)
    return math.sqrt((PRIOR_DOF * prior**2 + ss) / (PRIOR_DOF + n - 1))


def correction(
    at: Mapping[str, float],
    runs: Sequence[tuple[Mapping[str, float], float]],
    metric: str,
    scales: Mapping[str, float],
) -> Correction | None:
    """The posterior multiplier at `at` given runs as (configuration, log(measured / predicted)); None
    without runs."""
    if not runs:
        return None
    tau2, noise2 = TAU[metric] ** 2, NOISE**2
    s2 = spread_of([r for _, r in runs], metric) ** 2

    length = LENGTH[metric]

    def k(a: Mapping[str, float], b: Mapping[str, float]) -> float:
        return tau2 + s2 * math.exp(-0.5 * (distance(a, b, scales) / length) ** 2)

    points = [p for p, _ in runs]
    gram = [
        [k(p, q) + (noise2 if i == j else 0.0) for j, q in enumerate(points)] for i, p in enumerate(points)
    ]
    kstar = [k(at, p) for p in points]
    alpha = _solve(gram, [r for _, r in runs])
    mean = sum(a * b for a, b in zip(kstar, alpha, strict=True))
    v = _solve(gram, kstar)
    var = max(tau2 + s2 - sum(a * b for a, b in zip(kstar, v, strict=True)), 0.0)
    nearest = min(distance(at, p, scales) for p in points)
    return Correction(mean, math.sqrt(var + noise2), len(runs), nearest)


def leave_one_out(
    runs: Sequence[tuple[Mapping[str, float], float]], metric: str, scales: Mapping[str, float]
) -> list[tuple[float, float]]:
    """Each run predicted from the others: (error before, error after), each |predicted/measured - 1|."""
    out = []
    for i, (point, ratio) in enumerate(runs):
        rest = [r for j, r in enumerate(runs) if j != i]
        fix = correction(point, rest, metric, scales)
        after = ratio - (fix.log_mean if fix else 0.0)
        out.append((abs(math.exp(-ratio) - 1.0), abs(math.exp(-after) - 1.0)))
    return out


def shifted(p10: float, p50: float, p90: float, fix: Correction) -> tuple[float, float, float]:
    """An interval moved by the multiplier, each side as wide as the posterior says, never wider."""
    mid = p50 * fix.factor
    lo = min(math.log(p50 / p10) if p10 > 0 else math.inf, Z90 * fix.log_sd)
    hi = min(math.log(p90 / p50) if p50 > 0 else math.inf, Z90 * fix.log_sd)
    return mid * math.exp(-lo), mid, mid * math.exp(hi)
