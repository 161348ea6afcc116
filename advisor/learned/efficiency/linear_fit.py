"""Provides the fitting of the LLM linear model: Huber-loss ridge on log efficiency, every source weighted
equally, the signs physics demands held; the estimator (the physical one, speed of light x a constant per
family of source, or the ridge at one penalty) chosen by leave-one-source-out inside the rows it is fitted on
(numpy; training only)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.learned.efficiency.evaluate import apes, target
from advisor.learned.efficiency.linear import INPUTS, SIGNS, TYPICAL, LinearLogModel, llm_inputs, plan_of
from advisor.learned.efficiency.samples import Sample

if TYPE_CHECKING:
    from numpy.typing import NDArray

    Array = NDArray[Any]

# Ridge penalties tried (per row, on standardised inputs), up to where every weight is about 1e-5 of its
# unpenalised size (the intercept-only limit: the speed of light x one constant). HUBER: residuals beyond 0.2
# in log (about 22%) count linearly, so one source's outliers (runs measured above the core's speed of light)
# do not pull the line.
LAMBDAS = (0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
# The physical estimators: the speed of light of the stated layout x one constant, unpenalised, with at most
# these few physically motivated terms free (every other weight held at 0): the family of source (a vendor's
# tuned table, or a typical run), and how far the core's physics already discounts below peak.
PHYSICAL: tuple[tuple[str, ...], ...] = ((), ("vendor",), ("vendor", "log_sol_over_mfu"))
# Partial pooling of a stack's own residual (empirical Bayes on the sources behind it): a stack measured by n
# sources moves n / (n + k) of the way from the pooled estimate to the median of its sources' medians, so a
# stack seen in one source barely moves. The k tried, from the most pooling (closest to one constant) down.
POOLING = (4.0, 2.0, 1.0, 0.5)
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


@dataclass(frozen=True, slots=True, repr=False)
class Candidate:
    """One LLM estimator the nested selection may ship: the ridge at a penalty on every input, or a physical
    estimator (free: the only inputs whose weights are fitted, unpenalised; the rest held at 0)."""

    lam: float
    free: tuple[str, ...] | None = None
    """None: every input (the ridge)."""
    median: bool = False
    """The physical constant (per family of source, when 'vendor' is free) is the median log efficiency of
    the rows, every run counting once, instead of the source-balanced Huber fit."""
    pool: float = 0.0
    """> 0: each stack's own residual over the fit, shrunk by k = pool sources (stack_offsets); 0: none."""

    @property
    def name(self) -> str:
        """How the metadata and the evaluation name it."""
        if self.free is None:
            return f"ridge, lambda {self.lam:g}"
        how = "median" if self.median else "source-balanced Huber"
        stack = f" + the stack's residual, pooled (k = {self.pool:g} sources)" if self.pool else ""
        return f"physical: speed of light x constant ({how})" + "".join(f" + {n}" for n in self.free) + stack


def candidate_of(meta: dict) -> Candidate:
    """The candidate a fitted model's metadata names (an older artifact: the ridge at its penalty)."""
    free = meta.get("free")
    return Candidate(
        float(meta["lambda"]),
        tuple(free) if free is not None else None,
        bool(meta.get("median", False)),
        float(meta.get("pool", 0.0)),
    )


# The median's pooling path (from the most pooled) follows the median it shrinks to, before any other term.
CANDIDATES: tuple[Candidate, ...] = (
    Candidate(0.0, (), median=True),
    *(Candidate(0.0, (), median=True, pool=k) for k in POOLING),
    Candidate(0.0, ("vendor",), median=True),
    *(Candidate(0.0, free) for free in PHYSICAL),
    *(Candidate(lam) for lam in LAMBDAS),
)


def _solve_signed(A: Array, w: Array, y: Array, penalty: Array, held: frozenset[int] = frozenset()) -> Array:
    """Weighted ridge with the SIGNS held: a coefficient of the wrong sign is set to 0 and the rest refitted
    (an active set; the standardised inputs keep each raw coefficient's sign); inputs in held stay at 0."""
    import numpy as np

    fixed: set[int] = set(held)
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


def _huber_beta(A: Array, y: Array, base: Array, penalty: Array, held: frozenset[int]) -> Array:
    """Huber ridge weights by iteratively reweighted least squares (base: the source weights)."""
    import numpy as np

    w = base.copy()
    for _ in range(IRLS_STEPS):
        beta = _solve_signed(A, w, y, penalty, held)
        r = np.abs(y - A @ beta)
        w = base * np.where(r <= HUBER, 1.0, HUBER / np.maximum(r, 1e-12))
    return beta


def _median_beta(X: Array, y: Array, mean: Array, scale: Array, free: tuple[str, ...]) -> Array:
    """The median log efficiency (every run once) as the intercept; with 'vendor' free, one median per family
    of source (vendor tables, the rest) written as intercept and weight of the standardised flag."""
    import numpy as np

    beta = np.zeros(X.shape[1] + 1)
    if "vendor" not in free:
        beta[0] = float(np.median(y))
        return beta
    j = INPUTS.index("vendor")
    flag = X[:, j] > 0.5
    typical = float(np.median(y[~flag])) if (~flag).any() else float(np.median(y))
    vendor = float(np.median(y[flag])) if flag.any() else typical
    beta[j + 1] = (vendor - typical) * scale[j]
    beta[0] = typical + (vendor - typical) * mean[j]
    return beta


def stack_offsets(samples: Sequence[Sample], residuals: Sequence[float], k: float) -> dict[str, float]:
    """Each stack's log residual over a fit (residuals: measured - fitted, in log), partially pooled: the
    median of its sources' median residuals x n / (n + k), n the sources that measured the stack."""
    by_stack: dict[str, dict[str, list[float]]] = {}
    for s, r in zip(samples, residuals, strict=True):
        by_stack.setdefault(s.row.stack, {}).setdefault(s.row.origin, []).append(r)
    out = {}
    for stack, sources in sorted(by_stack.items()):
        n = len(sources)
        out[stack] = float(n / (n + k) * statistics.median(statistics.median(v) for v in sources.values()))
    return out


def _measured(samples: Sequence[Sample]) -> tuple[dict[str, int], tuple[str, ...]]:
    """The sources that measured each --stack (a data-only stack's runs_as), and the GPUs the runs used."""
    stacks: dict[str, set[str]] = {}
    for s in samples:
        stacks.setdefault(plan_of(s).stack, set()).add(s.row.origin)
    return {k: len(v) for k, v in sorted(stacks.items())}, tuple(sorted({s.row.gpu for s in samples}))


def fit_linear(
    samples: Sequence[Sample],
    lam: float | Candidate,
    interval: tuple[float, float] = (0.0, 0.0),
    widen: float = 0.0,
    widen_far: float = 0.0,
) -> LinearLogModel:
    """The candidate's fit on the LLM runs given: Huber ridge (intercept unpenalised; inputs outside a
    physical candidate's free ones held at 0), or the physical medians; with the interval (and its widening
    for an eager stack) given."""
    import numpy as np

    cand = lam if isinstance(lam, Candidate) else Candidate(lam)
    X = np.array([sample_inputs(s) for s in samples])
    y = np.array([target(s) for s in samples])
    mean, scale = X.mean(0), X.std(0)
    scale[scale == 0] = 1.0
    if cand.median:
        beta = _median_beta(X, y, mean, scale, cand.free or ())
    else:
        held = frozenset(j for j, n in enumerate(INPUTS) if cand.free is not None and n not in cand.free)
        A = np.hstack([np.ones((len(samples), 1)), (X - mean) / scale])
        # A floor on the penalty: a free input constant in these rows (no MoE run) leaves it solvable.
        penalty = np.diag([0.0] + [max(cand.lam, 1e-6) * len(samples)] * len(INPUTS))
        beta = _huber_beta(A, y, np.array(source_weights(samples)), penalty, held)
    offsets: dict[str, float] = {}
    if cand.pool > 0.0:
        fitted = beta[0] + ((X - mean) / scale) @ beta[1:]
        offsets = stack_offsets(samples, list(y - fitted), cand.pool)
    return LinearLogModel(
        INPUTS,
        float(beta[0]),
        tuple(float(v) for v in beta[1:]),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in X.min(0)),
        tuple(float(v) for v in X.max(0)),
        interval,
        {
            "lambda": cand.lam,
            "huber": HUBER,
            "estimator": cand.name,
            "median": cand.median,
            **({"free": list(cand.free)} if cand.free is not None else {}),
            **({"pool": cand.pool} if cand.pool else {}),
        },
        widen,
        offsets,
        widen_far,
        *_measured(samples),
    )


def predict_sample(model: LinearLogModel, s: Sample, vendor: float | None = None) -> float:
    """The model's log residual of one measured run: at its own vendor flag unless one is given, with its
    stack's own residual."""
    return model.predict_log(sample_inputs(s, vendor)) + model.stack_offset(s.row.stack)


def loso_medians(samples: Sequence[Sample], cand: Candidate) -> list[float]:
    """One candidate's held-out-source median error on these rows, per source, each run predicted as a user
    is answered: at the typical family of source (a vendor flag would know the held-out source's family)."""
    by_source: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_source.setdefault(s.row.origin, []).append(i)
    medians = []
    for test in by_source.values():
        held = set(test)
        train = [s for i, s in enumerate(samples) if i not in held]
        if not train:
            continue
        model = fit_linear(train, cand)
        predicted = [math.exp(predict_sample(model, samples[i], TYPICAL)) * samples[i].sol for i in test]
        medians.append(statistics.median(apes([samples[i] for i in test], predicted)))
    return medians


def simplest_first() -> list[Candidate]:
    """The candidates from the fewest fitted weights to the most: the physical ones in order (the median, its
    stacks' residuals from the most pooled down, then the family-of-source flag), then the ridge from the
    strongest penalty down."""
    return [c for c in CANDIDATES if c.free is not None] + sorted(
        (c for c in CANDIDATES if c.free is None), key=lambda c: -c.lam
    )


def choose_lambda(samples: Sequence[Sample]) -> tuple[Candidate, dict[Candidate, float]]:
    """The estimator for these LLM runs (all of them training rows: an evaluation calls this inside each
    fold), and every candidate's source-balanced held-out-source error (mean of the per-source medians).
    The one-standard-error rule: the simplest candidate within one standard error of the best, since with
    few sources the best figure is partly luck and the richer model pays for it on the next unseen source;
    the error of the difference, source by source (every candidate is scored on the same held-out sources,
    so what the sources share, how hard each is, is not counted as luck)."""
    per = {c: loso_medians(samples, c) for c in CANDIDATES}
    figures = {c: sum(m) / len(m) if m else math.inf for c, m in per.items()}
    best = min(CANDIDATES, key=lambda c: figures[c])
    chosen = next(
        c for c in simplest_first() if figures[c] <= figures[best] + paired_se(per[c], per[best]) + 1e-12
    )
    return chosen, figures


def paired_se(a: Sequence[float], b: Sequence[float]) -> float:
    """The standard error of the mean difference of two candidates' per-source errors (0 with one source)."""
    diff = [x - y for x, y in zip(a, b, strict=True)]
    return statistics.stdev(diff) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
