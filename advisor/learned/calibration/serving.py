"""Provides the serving calibration: a user's measured results on one GPU and engine as multipliers on the
serving model's efficiencies (decode bandwidth share, prefill speed, per-iteration cost, time before the
first token), so the scheduler simulation carries them to every other load, length and replica shape.

Each measured figure moves the multipliers it physically informs (GROUPS): TPOT and throughput the decode
ones (bandwidth share, per-iteration cost), TTFT the prefill ones (prefill speed, time before the first
token), so a first token the model misses is never paid for by the decode speed, nor the reverse. Slower
than the model, the two costs are read as time that stalls nothing: a first token late by time off the GPU
(seconds, REQUEST_UNIT_S), an iteration bounded by host time its kernels hide once they take longer
(HOST_UNIT_S). A result
that publishes TTFT and TPOT is not read again through its throughput (Little's law ties the three). Each
figure counts with what one result can tell of efficiencies shared across loads (figure_noise: the residual
multiplier's prior spread of that figure), so one result moves a multiplier by the share its prior spread
(fitted on the published results: priors.py) justifies, and the residual multiplier reproduces the rest.
The fit is Gauss-Newton on log figures with finite differences of the simulation, block by block, on all
of a profile's results on one GPU and engine together, done when a result is calibrated (or the profile
refreshed) and kept in the profile; several results at different loads separate what one cannot
(bandwidth from per-iteration cost).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from advisor.learned.calibration.multiplier import solve
from advisor.learned.calibration.priors import prior
from advisor.physics.serving import Efficiency

KNOBS = ("memory", "prefill", "overhead", "request")
"""The multipliers, in this order: decode bandwidth share (weights and KV), prefill speed (the prompt tokens'
part of an iteration, Efficiency.prefill: never the decode's compute share), the per-iteration and
per-sequence costs (above 1: a host time an iteration, Efficiency.host_s), the time a request spends before
the GPU sees it."""
KNOB_WORDS = {
    "memory": "decode bandwidth share",
    "prefill": "prefill speed",
    "overhead": "per-iteration cost",
    "request": "time before the first token",
}


def fit_name(base_model: str) -> str:
    """What a kept fit is named by: the serving model it moved and its multipliers, so a fit of other
    multipliers (a prefill compute share, before the prefill speed) is fitted again, never misread."""
    return f"{base_model}; multipliers {'/'.join(KNOBS)}"


NOISE = 0.02
"""Run-to-run repeatability of one measured figure, in log."""
METRICS = ("output_tok_s", "ttft_ms", "tpot_ms", "mean_ttft_ms", "mean_tpot_ms")
STEP = 0.05
"""Finite-difference step on a log multiplier: large enough to see past the simulation's discrete events."""
BOUND = 3.0
"""No multiplier beyond e^3 (20x) either way."""
ITERATIONS = 8
OVERHEAD_UNIT_S = 5e-3
"""The per-iteration cost's multiplier moves it by this many seconds per unit (e: +8.6 ms, e^-1: -3.2 ms)."""
HOST_UNIT_S = 0.02
"""The per-iteration cost's multiplier, above 1, sets a host time an iteration of this many seconds per unit
(e: 34 ms, e^2: 128 ms) that overlaps the GPU's work."""
REQUEST_UNIT_S = 0.25
"""The time before the first token's multiplier, above 1, adds this many seconds per unit (e: +0.43 s, e^3:
+4.8 s): a first token seconds late (a tokenizer, an API server's queue) is time off the GPU that no
multiplier of the learned few milliseconds could reach, so the fit could only slow prefill, which stalls
every decode behind it. Below 1 it scales the learned time down."""


@dataclass(frozen=True, slots=True, repr=False)
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
    m, f, o, r = (math.exp(max(-BOUND, min(BOUND, x))) for x in log_factors)
    cap = share_cap()
    changes = {
        "memory": min(cap, eff.memory * m),
        "kv": min(cap, eff.kv * m),
        # Prefill alone moves (a first token the model misses must not slow the decodes' compute-bound
        # part); never faster than its compute share at the cap.
        "prefill": min(eff.prefill * f, cap / eff.compute),
        "request_s": eff.request_s * r if r < 1.0 else eff.request_s + REQUEST_UNIT_S * (r - 1.0),
    }
    if o > 1.0:
        # A slower iteration than the model's is read as host time the GPU's work hides once it is longer
        # (dstack's DeepSeek-R1: TPOT 2x the model's at 4 clients, as the model's at 128).
        changes["host_s"] = eff.host_s + HOST_UNIT_S * (o - 1.0)
    else:
        # Faster: the learned costs, in units of OVERHEAD_UNIT_S for the per-iteration one (about 1 ms).
        changes["step_s"] = max(0.0, eff.step_s + OVERHEAD_UNIT_S * (o - 1.0))
        changes["per_seq_s"] = eff.per_seq_s * o
        if hasattr(eff, "layer_s"):  # the per-layer cost of a model priced from measured operations
            changes["layer_s"] = eff.layer_s * o
    return dataclasses.replace(eff, **changes)


Figures = Callable[[Sequence[float]], Mapping[str, float]]
"""The simulated figures (METRICS) of one measured deployment at its load, at given log multipliers."""
Result = tuple[Figures, Mapping[str, float]]
"""One measured result: how to simulate it, and what it measured."""

FIGURE = {
    "output_tok_s": "throughput",
    "ttft_ms": "ttft",
    "tpot_ms": "tpot",
    "mean_ttft_ms": "ttft",
    "mean_tpot_ms": "tpot",
}
"""Each measured metric's figure (its residual prior in priors.py)."""
GROUPS = ((("memory", "overhead"), ("throughput", "tpot")), (("prefill", "request"), ("ttft",)))
"""Which figures move which multipliers: decode speed (bandwidth share, per-iteration cost) is read from TPOT
and throughput, prefill (its speed, time before the first token) from TTFT. A TTFT the model misses
(a queue, a tokenizer) must not be paid for by the decode efficiency, nor a TPOT miss by the prefill."""
ROUNDS = 2
"""Decode, then prefill, twice: each block fitted with the other's multipliers held where they are."""


def reads(results: Sequence[Result]) -> list[set[str]]:
    """The metrics each result's efficiencies are read from: all it measured, but its throughput where it
    also measured TPOT and TTFT (a closed loop's throughput is concurrency x output / (TTFT + output x TPOT):
    the same evidence again, which would count the decode speed twice)."""
    out = []
    for _, measured in results:
        got = {k for k in METRICS if measured.get(k, 0.0) > 0}
        figs = {FIGURE[k] for k in got}
        if {"tpot", "ttft"} <= figs:
            got.discard("output_tok_s")
        out.append(got)
    return out


def figure_noise(metric: str) -> float:
    """What one result's figure cannot tell the engine's shared efficiencies from, in log: its repeatability,
    and what is particular to the deployment and load the result measured (the residual multiplier's prior
    spread for that figure, tau and SPREAD: priors.py). One result moves a multiplier by what it can tell."""
    p = prior(FIGURE[metric])
    return math.sqrt(NOISE**2 + p["tau"] ** 2 + p["spread"] ** 2)


@dataclass(frozen=True, slots=True, repr=False)
class _Block:
    """One block of the fit: the multipliers it frees (KNOBS indices), the figures it reads (indices into the
    observed names), their logs and noise, and the prior precision."""

    results: Sequence[Result]
    names: list[tuple[int, str]]
    free: tuple[int, ...]
    rows: tuple[int, ...]
    y: list[float]
    weight: list[float]
    p0: list[list[float]]


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


def fit(
    results: Sequence[Result], sd: Mapping[str, float] | None = None, exact: bool = False
) -> KnobFit | None:
    """The multipliers of highest posterior given measured results (sd: the spread of each log multiplier,
    the shipped priors unless given), each block of GROUPS read from its own figures with the others held;
    None when the simulation gives no figure for one of them. Each figure counts with figure_noise, so one
    result moves a multiplier only by what it can tell, and the residual multiplier reproduces the rest
    (exact: every figure at its repeatability NOISE, the multipliers that reproduce the results, as the
    priors' refit measures each published deployment's)."""
    p0 = prior_precision(sd)
    names, y = _observed(results)
    theta = [0.0] * len(KNOBS)
    if not names or _simulated(results, theta, names) is None:
        return None
    blocks = _blocks(results, names, y, p0, exact)
    for _ in range(ROUNDS):
        for block in blocks:
            theta = _best_start(block, theta)
    at = _simulated(results, theta, names)
    if at is None:
        return None
    precision = [list(row) for row in p0]
    for block in blocks:  # the blocks' information, each on the multipliers it frees
        jac = _jacobian(block, theta, [at[j] for j in block.rows])
        normal = _normal(block, jac)
        for a, i in enumerate(block.free):
            for b, k in enumerate(block.free):
                precision[i][k] += normal[a][b] - p0[i][k]
    return KnobFit(tuple(theta), tuple(tuple(row) for row in precision))


def _blocks(
    results: Sequence[Result],
    names: list[tuple[int, str]],
    y: list[float],
    p0: list[list[float]],
    exact: bool,
) -> list[_Block]:
    """The blocks of GROUPS that have a figure to read, each with its figures' logs and weights."""
    weight = [1.0 / (NOISE if exact else figure_noise(k)) ** 2 for _, k in names]
    read = reads(results)
    blocks = []
    for knobs, figs in GROUPS:
        rows = tuple(j for j, (i, k) in enumerate(names) if FIGURE[k] in figs and k in read[i])
        if rows:
            free = tuple(KNOBS.index(k) for k in knobs)
            blocks.append(
                _Block(results, names, free, rows, [y[j] for j in rows], [weight[j] for j in rows], p0)
            )
    return blocks


def _best_start(block: _Block, theta: list[float]) -> list[float]:
    """The block's multipliers of highest posterior, the others held at theta. The simulation has kinks (a
    share at its cap, a cost at zero) where Gauss-Newton stalls: it starts from where theta is and from the
    per-iteration cost up or down (when the block frees it), and keeps the best."""
    starts = [list(theta)]
    over = KNOBS.index("overhead")
    if over in block.free:
        for shift in (1.0, -1.0):
            moved = list(theta)
            moved[over] = shift
            starts.append(moved)
    best: tuple[float, list[float]] | None = None
    for start in starts:
        got = _descend(block, start)
        if got is not None and (best is None or got[0] < best[0]):
            best = got
    return best[1] if best is not None else theta


def _sub(block: _Block, theta: Sequence[float]) -> list[float] | None:
    """The logs of the block's simulated figures at theta."""
    at = _simulated(block.results, theta, block.names)
    return None if at is None else [at[j] for j in block.rows]


def _descend(block: _Block, theta: list[float]) -> tuple[float, list[float]] | None:
    """Gauss-Newton on the block's multipliers from theta: (the posterior's objective, theta) at the end."""
    at = _sub(block, theta)
    if at is None:
        return None
    for _ in range(ITERATIONS):
        jac = _jacobian(block, theta, at)
        step = solve(_normal(block, jac), _gradient(block, jac, theta, at))
        moved, got = _line_search(block, theta, step, at)
        if moved is None:
            break
        done = max(abs(a - b) for a, b in zip(moved, theta, strict=True)) < 1e-3
        theta, at = moved, got
        if done:
            break
    return _objective(block, theta, at), theta


def _normal(block: _Block, jac: list[list[float]]) -> list[list[float]]:
    """J'WJ + P0 over the block's multipliers: the posterior precision of the linearised problem."""
    n = len(block.free)
    return [
        [
            sum(w * row[a] * row[b] for w, row in zip(block.weight, jac, strict=True))
            + block.p0[block.free[a]][block.free[b]]
            for b in range(n)
        ]
        for a in range(n)
    ]


def _gradient(
    block: _Block, jac: list[list[float]], theta: Sequence[float], at: Sequence[float]
) -> list[float]:
    """J'W(y - f) - P0 theta over the block's multipliers: the Gauss-Newton right-hand side."""
    return [
        sum(w * row[a] * (yk - fk) for w, row, yk, fk in zip(block.weight, jac, block.y, at, strict=True))
        - block.p0[i][i] * theta[i]
        for a, i in enumerate(block.free)
    ]


def _objective(block: _Block, theta: Sequence[float], at: Sequence[float]) -> float:
    data = sum(w * (a - b) ** 2 for w, a, b in zip(block.weight, at, block.y, strict=True))
    return data + sum(block.p0[i][i] * t * t for i, t in enumerate(theta))


def _line_search(
    block: _Block, theta: list[float], step: list[float], at: list[float]
) -> tuple[list[float] | None, list[float]]:
    """The Gauss-Newton step, halved until the posterior improves (the simulation is not smooth)."""
    best = _objective(block, theta, at)
    scale = 1.0
    for _ in range(6):
        cand = list(theta)
        for a, i in enumerate(block.free):
            cand[i] = max(-BOUND, min(BOUND, theta[i] + scale * step[a]))
        got = _sub(block, cand)
        if got is not None and _objective(block, cand, got) < best:
            return cand, got
        scale /= 2.0
    return None, at


def _jacobian(block: _Block, theta: Sequence[float], at: list[float]) -> list[list[float]]:
    """d log figure / d log multiplier of the block's figures and multipliers by forward differences (a
    figure the simulation loses: slope 0)."""
    cols = []
    for i in block.free:
        moved = list(theta)
        moved[i] += STEP
        got = _sub(block, moved)
        cols.append([(g - a) / STEP for g, a in zip(got, at, strict=True)] if got else [0.0] * len(at))
    return [[col[k] for col in cols] for k in range(len(at))]
