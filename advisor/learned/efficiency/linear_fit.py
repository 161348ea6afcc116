"""Provides the fitting of the LLM linear model: Huber-loss ridge on log efficiency, every source weighted
equally, the penalty chosen by leave-one-source-out cross-validation (numpy; training only)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from advisor.learned.efficiency.evaluate import apes, conformal_offsets, held_out, target
from advisor.learned.efficiency.features import Sample
from advisor.learned.efficiency.linear import INPUTS, LinearLogModel, llm_inputs

# Ridge penalties tried (per row, on standardised inputs); the one with the smallest leave-one-source-out
# median error ships. HUBER: residuals beyond 0.2 in log (about 22%) count linearly, so one source's outliers
# (e.g. runs measured above the core's speed of light) do not pull the line.
LAMBDAS = (0.1, 1.0, 10.0)
HUBER = 0.2
IRLS_STEPS = 20


def sample_inputs(s: Sample) -> list[float]:
    """The linear model's inputs of one measured run."""
    return llm_inputs(s.features, math.log(s.sol / s.mfu_sol))


def source_weights(samples: Sequence[Sample]) -> list[float]:
    """1 / rows of the run's source, normalised to mean 1: every source counts as much as any other."""
    counts: dict[str, int] = {}
    for s in samples:
        counts[s.row.origin] = counts.get(s.row.origin, 0) + 1
    raw = [1.0 / counts[s.row.origin] for s in samples]
    mean = sum(raw) / len(raw)
    return [w / mean for w in raw]


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
        beta = np.linalg.solve(A.T @ (A * w[:, None]) + penalty, A.T @ (w * y))
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


def linear_fit_predict(
    samples: Sequence[Sample], lam: float
) -> Callable[[list[int], list[int]], list[float]]:
    """A fit_predict for held_out(): fitted on the LLM runs among the training rows."""

    def run(train: list[int], test: list[int]) -> list[float]:
        model = fit_linear([samples[i] for i in train if samples[i].family == "llm"], lam)
        return [model.predict_log(sample_inputs(samples[i])) for i in test]

    return run


def choose_lambda(
    samples: Sequence[Sample], group: Callable[[Sample], str]
) -> tuple[float, dict[float, float]]:
    """The penalty with the smallest held-out-source median error on the LLM runs, and every one's figure."""
    rows = [i for i, s in enumerate(samples) if s.family == "llm"]
    figures = {}
    for lam in LAMBDAS:
        oof = held_out(samples, rows, group, linear_fit_predict(samples, lam))
        predicted = [min(math.exp(oof[i]), 1.0) * samples[i].sol for i in rows]
        figures[lam] = statistics.median(apes([samples[i] for i in rows], predicted))
    return min(LAMBDAS, key=lambda lam: (figures[lam], lam)), figures


def fit_shipped(
    samples: Sequence[Sample], group: Callable[[Sample], str]
) -> tuple[LinearLogModel, dict[str, float]]:
    """The shipped LLM model: penalty chosen by held-out source, fitted on every LLM run, its P10-P90 the
    split-conformal offsets of the held-out-source residuals (each source weighted equally)."""
    lam, figures = choose_lambda(samples, group)
    rows = [i for i, s in enumerate(samples) if s.family == "llm"]
    oof = held_out(samples, rows, group, linear_fit_predict(samples, lam))
    interval = conformal_offsets(samples, oof, group)
    model = fit_linear([samples[i] for i in rows], lam, interval)
    return model, {f"lambda {k:g}": round(v, 4) for k, v in figures.items()}
