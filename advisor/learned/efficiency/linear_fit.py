"""Provides the fitting of the LLM linear model: Huber-loss ridge on log efficiency, every source weighted
equally, the signs physics demands held, the penalty chosen by leave-one-source-out inside the rows it is
fitted on (numpy; training only)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from advisor.learned.efficiency.evaluate import apes, target
from advisor.learned.efficiency.features import Sample
from advisor.learned.efficiency.linear import INPUTS, SIGNS, TYPICAL, LinearLogModel, llm_inputs

# Ridge penalties tried (per row, on standardised inputs); the one with the smallest leave-one-source-out
# median error among the rows being fitted ships. HUBER: residuals beyond 0.2 in log (about 22%) count
# linearly, so one source's outliers (runs measured above the core's speed of light) do not pull the line.
LAMBDAS = (0.1, 1.0, 10.0, 100.0)
HUBER = 0.2
IRLS_STEPS = 20
_SIGN_COLUMNS = {INPUTS.index(name): sign for name, sign in SIGNS.items()}


def is_vendor(s: Sample) -> float:
    """1 for a run from a vendor's tuned benchmark table, 0 for a paper, report or independent run."""
    return 1.0 if s.row.source_family == "vendor" else 0.0


def sample_inputs(s: Sample, vendor: float | None = None) -> list[float]:
    """The linear model's inputs of one measured run (its own vendor flag unless one is given)."""
    return llm_inputs(s.features, math.log(s.sol / s.mfu_sol), is_vendor(s) if vendor is None else vendor)


def source_weights(samples: Sequence[Sample]) -> list[float]:
    """1 / rows of the run's source, normalised to mean 1: every source counts as much as any other."""
    counts: dict[str, int] = {}
    for s in samples:
        counts[s.row.origin] = counts.get(s.row.origin, 0) + 1
    raw = [1.0 / counts[s.row.origin] for s in samples]
    mean = sum(raw) / len(raw)
    return [w / mean for w in raw]


def _solve_signed(A, w, y, penalty):
    """Weighted ridge with the SIGNS held: a coefficient of the wrong sign is set to 0 and the rest refitted
    (an active set; the standardised inputs keep each raw coefficient's sign)."""
    import numpy as np

    fixed: set[int] = set()
    while True:
        free = [j for j in range(A.shape[1]) if j - 1 not in fixed]
        sub = A[:, free]
        beta_free = np.linalg.solve(sub.T @ (sub * w[:, None]) + penalty[np.ix_(free, free)], sub.T @ (w * y))
        beta = np.zeros(A.shape[1])
        beta[free] = beta_free
        wrong = {j: beta[j + 1] * sign for j, sign in _SIGN_COLUMNS.items() if j not in fixed}
        worst = min(wrong, key=lambda j: wrong[j], default=None)
        if worst is None or wrong[worst] >= 0.0:
            return beta
        fixed.add(worst)


def fit_linear(
    samples: Sequence[Sample], lam: float, interval: tuple[float, float] = (0.0, 0.0)
) -> LinearLogModel:
    """Huber ridge on the LLM runs given (intercept unpenalised), by iteratively reweighted least squares."""
    import numpy as np

    X = np.array([sample_inputs(s) for s in samples])
    y = np.array([target(s) for s in samples])
    mean, scale = X.mean(0), X.std(0)
    scale[scale == 0] = 1.0
    A = np.hstack([np.ones((len(samples), 1)), (X - mean) / scale])
    base = np.array(source_weights(samples))
    penalty = np.diag([0.0] + [lam * len(samples)] * len(INPUTS))
    w = base.copy()
    for _ in range(IRLS_STEPS):
        beta = _solve_signed(A, w, y, penalty)
        r = np.abs(y - A @ beta)
        w = base * np.where(r <= HUBER, 1.0, HUBER / np.maximum(r, 1e-12))
    return LinearLogModel(
        INPUTS,
        float(beta[0]),
        tuple(float(v) for v in beta[1:]),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in X.min(0)),
        tuple(float(v) for v in X.max(0)),
        interval,
        {"lambda": lam, "huber": HUBER},
    )


def _loso_median(samples: Sequence[Sample], lam: float) -> float:
    """The source-balanced (mean of per-source medians) held-out-source error of one penalty on these rows."""
    by_source: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_source.setdefault(s.row.origin, []).append(i)
    medians = []
    for test in by_source.values():
        held = set(test)
        train = [s for i, s in enumerate(samples) if i not in held]
        if not train:
            continue
        model = fit_linear(train, lam)
        predicted = [math.exp(model.predict_log(sample_inputs(samples[i]))) * samples[i].sol for i in test]
        medians.append(statistics.median(apes([samples[i] for i in test], predicted)))
    return sum(medians) / len(medians) if medians else math.inf


def choose_lambda(samples: Sequence[Sample]) -> tuple[float, dict[float, float]]:
    """The penalty with the smallest source-balanced held-out-source error on these LLM runs (all of them are
    training rows: an evaluation calls this inside each fold), and every penalty's figure."""
    figures = {lam: _loso_median(samples, lam) for lam in LAMBDAS}
    return min(LAMBDAS, key=lambda lam: (figures[lam], lam)), figures


def nested_fit_predict(
    samples: Sequence[Sample], vendor: float | None = None
) -> Callable[[list[int], list[int]], list[float]]:
    """A fit_predict for held_out(): the penalty chosen by leave-one-source-out among the training rows' LLM
    runs only (nested: the held-out rows never choose it), then fitted on them; predictions at the rows' own
    vendor flag, or at the one given."""

    def run(train: list[int], test: list[int]) -> list[float]:
        rows = [samples[i] for i in train if samples[i].family == "llm"]
        lam, _ = choose_lambda(rows)
        model = fit_linear(rows, lam)
        return [model.predict_log(sample_inputs(samples[i], vendor)) for i in test]

    return run


def typical_fit_predict(samples: Sequence[Sample]) -> Callable[[list[int], list[int]], list[float]]:
    """nested_fit_predict at the typical (non-vendor) flag: the P50 a user is shown."""
    return nested_fit_predict(samples, TYPICAL)
