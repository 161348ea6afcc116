"""Provides the calibration multiplier: a Gaussian-process posterior of log(measured / predicted) at a
configuration, given the user's runs at theirs.

Training: the log ratio of a plan is c a + x b + u o + e(x): its step's compute share c times what the
user's cluster does to compute time (its GPUs, clocks, kernels: compute time x exp(-a)), its exposed-
communication share x times what it does to communication (its fabric: x exp(-b)), its 1 / step seconds u
times a per-step overhead (-o seconds), and what is particular to one configuration, e(x) (prior spread
SPREAD, correlated between configurations as exp(-d^2 / 2 L^2) of their distance d); each run is measured
with noise NOISE. a, b and o have prior spreads fitted on the published runs
(advisor/learned/calibration/priors.py), so one run moves the part of the step its own breakdown says it
measured: a TP8 run whose step waits on its collectives says more about the fabric than a PP2 run does, and a
PP2 plan on the same cluster then moves by its own shares of what was learned.
Serving residuals (what is left once the efficiencies moved): tau, the same for every result of a deployment.
With one run the same configuration gets nearly all of its ratio, a far one only the shared parts' share, and
the posterior spread widens the interval as the distance grows. From three runs on, their own spread replaces
SPREAD's prior (pooled with it, as a prior worth PRIOR_DOF runs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from advisor.learned.calibration.priors import prior

NOISE = 0.02
"""The run-to-run repeatability of a user's reruns (a few percent), in log."""
PRIOR_DOF = 2.0
FAR = math.log(2.0)
"""A run measured more than 2x from (or under half of) the base prediction is flagged before it is trusted."""
Z90 = 1.2816
SHARES = ("share_compute", "share_comm", "inv_step_s")
"""A training configuration's parts, as its point carries them: compute and exposed-communication shares of
the step, 1 / step seconds. A point without them is all compute."""
SHARE_DEFAULTS = {"share_compute": 1.0, "share_comm": 0.0, "inv_step_s": 0.0}
SHARE_PRIOR = {"share_compute": "compute", "share_comm": "comm", "inv_step_s": "overhead_s"}
SHARE_WORDS = {
    "share_compute": "compute time",
    "share_comm": "exposed communication",
    "inv_step_s": "per-step overhead",
}


def hyper(metric: str) -> tuple[dict[str, float], float, float]:
    """The metric's (spread of each shared part, SPREAD, L): training's parts, or a serving metric's tau."""
    p = prior(metric)
    if metric == "training":
        return {f: p[SHARE_PRIOR[f]] for f in SHARES}, p["spread"], p["length"]
    return {"one": p["tau"]}, p["spread"], p["length"]


def features(point: Mapping[str, float], names: Sequence[str]) -> list[float]:
    """The point's value of each shared part (1 for 'one', the defaults where the point lacks it)."""
    return [1.0 if n == "one" else float(point.get(n, SHARE_DEFAULTS.get(n, 0.0))) for n in names]


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


@dataclass(frozen=True, slots=True, repr=False)
class Correction:
    """The multiplier at one configuration: exp(log_mean), its posterior spread in log, and how many runs
    (and how near) stand behind it."""

    log_mean: float
    log_sd: float
    runs: int
    nearest: float
    """The distance to the nearest run (0: the same configuration)."""
    parts: tuple[tuple[str, float], ...] = ()
    """The posterior mean of each shared part's coefficient on the log ratio (training: compute, exposed
    communication, per-step overhead): the time of that part is multiplied by exp(-coefficient), the overhead
    adds -coefficient seconds."""

    @property
    def factor(self) -> float:
        """The multiplier on the base prediction."""
        return math.exp(self.log_mean)


def distance(a: Mapping[str, float], b: Mapping[str, float], scales: Mapping[str, float]) -> float:
    """The scaled Euclidean distance of two configurations over the features both have."""
    return math.sqrt(sum(((a[k] - b[k]) / s) ** 2 for k, s in scales.items() if k in a and k in b))


def solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
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
    base = hyper(metric)[1]
    n = len(ratios)
    if n < 3:
        return base
    mean = sum(ratios) / n
    ss = sum((r - mean) ** 2 for r in ratios)
    return math.sqrt((PRIOR_DOF * base**2 + ss) / (PRIOR_DOF + n - 1))


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
    shared, _, length = hyper(metric)
    names = list(shared)
    var = [shared[n] ** 2 for n in names]
    s2, noise2 = spread_of([r for _, r in runs], metric) ** 2, NOISE**2

    def lin(a: Mapping[str, float], b: Mapping[str, float]) -> float:
        return sum(v * x * y for v, x, y in zip(var, features(a, names), features(b, names), strict=True))

    def k(a: Mapping[str, float], b: Mapping[str, float]) -> float:
        return lin(a, b) + s2 * math.exp(-0.5 * (distance(a, b, scales) / length) ** 2)

    points = [p for p, _ in runs]
    gram = [
        [k(p, q) + (noise2 if i == j else 0.0) for j, q in enumerate(points)] for i, p in enumerate(points)
    ]
    kstar = [k(at, p) for p in points]
    alpha = solve(gram, [r for _, r in runs])
    mean = sum(a * b for a, b in zip(kstar, alpha, strict=True))
    v = solve(gram, kstar)
    prior_var = lin(at, at) + s2
    post = max(prior_var - sum(a * b for a, b in zip(kstar, v, strict=True)), 0.0)
    nearest = min(distance(at, p, scales) for p in points)
    # Each shared part's coefficient: its prior variance times its feature over the runs, weighted by alpha.
    parts = tuple(
        (n, var[i] * sum(features(p, names)[i] * a for p, a in zip(points, alpha, strict=True)))
        for i, n in enumerate(names)
    )
    return Correction(mean, math.sqrt(post + noise2), len(runs), nearest, parts)


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
