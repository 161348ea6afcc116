"""Provides the serving calibration: a user's measured results on one GPU and engine as multipliers on the
serving model's efficiencies (decode bandwidth share, prefill compute share, per-iteration cost, time before
the first token), so the scheduler simulation carries them to every other load, length and replica shape.

One result (throughput, TTFT and TPOT at a concurrency) is three numbers; the four multipliers are read from
them as the maximum a posteriori under a prior per multiplier (fitted on the published results: priors.py):
TPOT moves the decode bandwidth share and the per-iteration cost (their split set by the prior and by how the
batch changes the iteration), TTFT the prefill rate and the time before the first token. The fit is
Gauss-Newton on log figures with finite differences of the simulation, on all of a profile's results on one
GPU and engine together, done when a result is calibrated (or the profile refreshed) and kept in the profile;
several results at different loads separate what one cannot (bandwidth from per-iteration cost).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from advisor.learned.calibration.multiplier import solve
from advisor.learned.calibration.priors import prior
from advisor.physics.serving import Efficiency

KNOBS = ("memory", "compute", "overhead", "request")
"""The multipliers, in this order: decode bandwidth share (weights and KV), prefill compute share, the
per-iteration and per-sequence costs, the time a request spends before the GPU sees it."""
KNOB_WORDS = {
    "memory": "decode bandwidth share",
    "compute": "prefill compute share",
    "overhead": "per-iteration cost",
    "request": "time before the first token",
}
NOISE = 0.02
"""Run-to-run repeatability of one measured figure, in log."""
METRICS = ("output_tok_s", "ttft_ms", "tpot_ms", "mean_ttft_ms", "mean_tpot_ms")
STEP = 0.05
"""Finite-difference step on a log multiplier: large enough to see past the simulation's discrete events."""
BOUND = 3.0
"""No multiplier beyond e^3 (20x) either way."""
ITERATIONS = 8
STARTS = ((0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, -1.0, 0.0))
"""Where the fit starts: no change, and the per-iteration cost up (e: +8.6 ms) or down."""
OVERHEAD_UNIT_S = 5e-3
"""The per-iteration cost's multiplier moves it by this many seconds per unit (e: +8.6 ms, e^-1: -3.2 ms)."""


@dataclass(frozen=True, slots=True)
class KnobFit:
    """A posterior over the log multipliers: its mean and its precision (inverse covariance)."""

    mean: tuple[float, ...]
    precision: tuple[tuple[float, ...], ...]

    def factors(self) -> dict[str, float]:
        """Each multiplier, by name."""
        return {k: math.exp(m) for k, m in zip(KNOBS, self.mean, strict=True)}


def prior_precision(sd: Mapping[str, float] | None = None) -> list[list[float]]:
    """The prior's precision matrix (diagonal): each log multiplier's spread between deployments, fitted on
    the published results (priors.py; sd overrides it)."""
    sd = sd or prior("serving_knobs")
    n = len(KNOBS)
    return [[1.0 / sd[KNOBS[i]] ** 2 if i == j else 0.0 for j in range(n)] for i in range(n)]


def share_cap() -> float:
    """The highest kernel share the serving model in use allows (1: the datasheet's bandwidth and peak; a
    model priced from measured kernels allows its own bound)."""
    from advisor.learned.serving import model

    return float(getattr(model, "SHARE_MAX", 1.0))


def adjusted(eff: Efficiency, log_factors: Sequence[float]) -> Efficiency:
    """The efficiencies moved by the multipliers (KNOBS order), every share kept under the model's cap."""
    m, c, o, r = (math.exp(max(-BOUND, min(BOUND, x))) for x in log_factors)
    cap = share_cap()
    changes = {
        "memory": min(cap, eff.memory * m),
        "kv": min(cap, eff.kv * m),
        "compute": min(cap, eff.compute * c),
        # The per-iteration cost moves in units of OVERHEAD_UNIT_S, not of the learned cost (about 1 ms): an
        # engine whose scheduler or sampler takes 20 ms more an iteration is one multiplier away.
        "step_s": max(0.0, eff.step_s + OVERHEAD_UNIT_S * (o - 1.0)),
        "per_seq_s": eff.per_seq_s * o,
        "request_s": eff.request_s * r,
    }
    if hasattr(eff, "layer_s"):  # the per-layer cost of a model priced from measured operations
        changes["layer_s"] = eff.layer_s * o
    return dataclasses.replace(eff, **changes)


Figures = Callable[[Sequence[float]], Mapping[str, float]]
"""The simulated figures (METRICS) of one measured deployment at its load, at given log multipliers."""
Result = tuple[Figures, Mapping[str, float]]
"""One measured result: how to simulate it, and what it measured."""


def _observed(results: Sequence[Result]) -> tuple[list[tuple[int, str]], list[float]]:
    """(result, metric) of every figure the results measured, and their logs."""
    names = [(i, k) for i, (_, m) in enumerate(results) for k in METRICS if m.get(k, 0.0) > 0]
    return names, [math.log(results[i][1][k]) for i, k in names]


def _simulated(
    results: Sequence[Result], theta: Sequence[float], names: list[tuple[int, str]]
) -> list[float] | None:
    """The logs of the simulated figures, in the order of names (None when one is missing)."""
    got = [results[i][0](theta) for i in range(len(results))]
    out = []
    for i, k in names:
        v = got[i].get(k)
        if v is None or not math.isfinite(v) or v <= 0:
            return None
        out.append(math.log(v))
    return out


def fit(results: Sequence[Result], sd: Mapping[str, float] | None = None) -> KnobFit | None:
    """The multipliers of highest posterior given measured results (sd: the spread of each log multiplier,
    the shipped priors unless given); None when the simulation gives no figure for one of them. The
    simulation has kinks (a share at its cap, a cost at zero) where Gauss-Newton stalls: it starts from no
    change and from the per-iteration cost up or down, and keeps the best."""
    p0 = prior_precision(sd)
    names, y = _observed(results)
    best: tuple[float, KnobFit] | None = None
    for start in STARTS:
        got = _descend(results, list(start), names, y, p0)
        if got is not None and (best is None or got[0] < best[0]):
            best = got
    return best[1] if best is not None else None


def _descend(
    results: Sequence[Result],
    theta: list[float],
    names: list[tuple[int, str]],
    y: list[float],
    p0: list[list[float]],
) -> tuple[float, KnobFit] | None:
    """Gauss-Newton from theta: (the posterior's objective, the fit) at the end."""
    at = _simulated(results, theta, names)
    if at is None or not names:
        return None
    jac = _jacobian(results, theta, at, names)
    for _ in range(ITERATIONS):
        step = solve(_normal(jac, p0), _gradient(jac, p0, theta, y, at))
        moved, got = _line_search(results, theta, step, names, y, at, p0)
        if moved is None:
            break
        done = max(abs(a - b) for a, b in zip(moved, theta, strict=True)) < 1e-3
        theta, at = moved, got
        jac = _jacobian(results, theta, at, names)
        if done:
            break
    objective = _objective(theta, at, y, p0)
    return objective, KnobFit(tuple(theta), tuple(tuple(r) for r in _normal(jac, p0)))


def _normal(jac: list[list[float]], p0: list[list[float]]) -> list[list[float]]:
    """J'J / NOISE^2 + P0: the posterior precision of the linearised problem."""
    n, w = len(p0), 1.0 / NOISE**2
    return [[w * sum(row[i] * row[j] for row in jac) + p0[i][j] for j in range(n)] for i in range(n)]


def _gradient(
    jac: list[list[float]],
    p0: list[list[float]],
    theta: Sequence[float],
    y: Sequence[float],
    at: Sequence[float],
) -> list[float]:
    """J'(y - f) / NOISE^2 - P0 theta: the Gauss-Newton right-hand side."""
    n, w = len(p0), 1.0 / NOISE**2
    return [
        w * sum(row[i] * (yk - fk) for row, yk, fk in zip(jac, y, at, strict=True))
        - sum(p0[i][j] * theta[j] for j in range(n))
        for i in range(n)
    ]


def _objective(
    theta: Sequence[float], at: Sequence[float], y: Sequence[float], p0: list[list[float]]
) -> float:
    data = sum((a - b) ** 2 for a, b in zip(at, y, strict=True)) / NOISE**2
    return data + sum(p0[i][i] * t * t for i, t in enumerate(theta))


def _line_search(
    results: Sequence[Result],
    theta: list[float],
    step: list[float],
    names: list[tuple[int, str]],
    y: list[float],
    at: list[float],
    p0: list[list[float]],
) -> tuple[list[float] | None, list[float]]:
    """The Gauss-Newton step, halved until the posterior improves (the simulation is not smooth)."""
    best = _objective(theta, at, y, p0)
    scale = 1.0
    for _ in range(6):
        cand = [max(-BOUND, min(BOUND, t + scale * s)) for t, s in zip(theta, step, strict=True)]
        got = _simulated(results, cand, names)
        if got is not None and _objective(cand, got, y, p0) < best:
            return cand, got
        scale /= 2.0
    return None, at


def _jacobian(
    results: Sequence[Result], theta: list[float], at: list[float], names: list[tuple[int, str]]
) -> list[list[float]]:
    """d log figure / d log multiplier by forward differences (a figure the simulation loses: slope 0)."""
    cols = []
    for i in range(len(KNOBS)):
        moved = list(theta)
        moved[i] += STEP
        got = _simulated(results, moved, names)
        cols.append([(g - a) / STEP for g, a in zip(got, at, strict=True)] if got else [0.0] * len(names))
    return [[cols[i][k] for i in range(len(KNOBS))] for k in range(len(names))]
