"""Fit the serving model's parameters to measured rows (training time only: needs scipy, shipped with
scikit-learn).

Least squares on log(predicted / measured) of throughput, TPOT and mean TTFT (closed loops' and a request
rate's, priced through the queueing, which itself has no parameters), soft-L1 (robust to a mis-transcribed
cell), each source repository weighted by 1/sqrt(its rows) so that TensorRT-LLM's hundreds of rows do not
drown the other engines; engine offsets shrunk toward zero (ridge, per term) and centred, so that the globals
are the average measured engine. Held-out scores refit without the held-out group (evaluate.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from advisor.learned.serving.data import Case
from advisor.learned.serving.model import ENGINE_TERMS, GLOBALS, ServingModel, initial
from advisor.learned.serving.observe import fit_obs, traits

if TYPE_CHECKING:
    from numpy.typing import NDArray

SEED = 0  # recorded in the metadata: the fit is deterministic (fixed start, no random draws)
ENGINE_RIDGE = {"memory": 0.3, "compute": 0.3, "step": 0.3, "request": 0.01, "comm": 0.3}
"""Residual weight on each engine offset, per term: the kernels' efficiencies are pulled toward the engines'
common value (they are confounded with the fp8 and AMD traits, which few engines' rows separate), the time a
request spends in the engine's API server only lightly (it is the engine's own)."""
HELD_RIDGE = 100.0
"""Residual weight on an engine's `request` offset where none of its rows that state a first-token time ran
its current release (every such vLLM row is V0, before 0.8: the `legacy` trait). Those rows identify the old
server's time, which `request_legacy` holds; left free, the offset took part of it (the two are collinear on
those rows, split by their shrinkage) and carried it into every answer for the current release, whose API
server is another program (V1's API server talks to an engine core in a background process,
"AsyncMPClient: ZMQ + background proc EngineCore w/ asyncio (for AsyncLLM)":
vllm-project/vllm@00080ee13c7a451fce071ccb8d0e94d395acf5a7 vllm/v1/engine/core_client.py EngineCoreClient).
Held at the engines' average (0) until a current release's first tokens are measured."""
CENTRE_WEIGHT = 1.0
"""Residual weight on each term's mean engine offset: the globals are the average measured engine, so an
engine held out (or never measured) gets the average, not whatever the offsets left over. Without it a term
that only one engine's rows identify (fp8 compute: nearly all TensorRT-LLM) drifts with that engine's offset
and the others inherit the drift (a fold without vLLM put the common fp8 compute at 5% of peak)."""
PRIOR_WEIGHT = 0.1  # a weak pull of every global toward its starting value, so that no term runs off to +-30
SHARE_PRIOR_WEIGHT = 2.0
"""The pull of the kernel shares (memory, compute, kv, experts) and of the all-reduce multiplier toward 'as
measured': the measured tables are the model; the fit moves them only as far as many rows agree. (Left free,
the multiplier doubles every all-reduce to buy the small-batch decodes' wait for the slowest rank, which
`sync` prices per call, and so prices TensorRT-LLM's offline TP8 runs, whose megabyte messages run at
nccl-tests' rate or faster, a quarter too slow.)"""
SHARE_PARAMS = ("memory", "kv", "experts", "experts_thin", "compute")
AMD_PRIOR_WEIGHT = 0.5
COMM_PRIOR_WEIGHT = 0.5
"""AMD GPUs' kernel shares are pulled less: no AMD GEMM grid is measured, so their kernels are carried from
an NVIDIA GPU's by the roofline ratio, and the software stack (ROCm, its kernels) differs."""
MAX_EVALUATIONS = 60


def source_of(c: Case) -> str:
    return c.ref.split("@")[0]


def _unpack(x: Sequence[float], engines: list[str]) -> ServingModel:
    params = {k: float(v) for k, v in zip(GLOBALS, x[: len(GLOBALS)], strict=True)}
    rest = x[len(GLOBALS) :]
    per = len(ENGINE_TERMS)
    offsets = {
        e: {k: float(v) for k, v in zip(ENGINE_TERMS, rest[i * per : (i + 1) * per], strict=True)}
        for i, e in enumerate(engines)
    }
    return ServingModel(params, offsets, {}, {})


MAX_LOG_ERROR = 3.0  # a prediction off by more than e^3 (or infinite: over capacity) counts as e^3


def clipped_log_ratio(predicted: float, measured: float) -> float:
    """log(predicted / measured) within +-MAX_LOG_ERROR (an over-capacity prediction is infinite)."""
    if not predicted > 0:
        return -MAX_LOG_ERROR
    if not math.isfinite(predicted):
        return MAX_LOG_ERROR
    return max(-MAX_LOG_ERROR, min(MAX_LOG_ERROR, math.log(predicted / measured)))


def residuals_of(model: ServingModel, rows: Sequence[Case], weights: dict[str, float]) -> list[float]:
    """Weighted log errors of every fitted figure of every row."""
    out = []
    for c in rows:
        eff = model.efficiency(traits(c))
        w = weights[source_of(c)]
        for o in fit_obs(c, eff):
            out.append(w * clipped_log_ratio(o.predicted, o.measured))
    return out


STEP = 1e-4  # relative change of an efficiency field for its finite difference


def jacobian_of(
    model: ServingModel, rows: Sequence[Case], weights: dict[str, float], names: list[str]
) -> NDArray[Any]:
    """d residual / d parameter by the chain rule: each row's figures are differenced against the eight
    efficiency fields (eight passes, not one per parameter), times d field / d parameter (analytic)."""
    import numpy as np  # training only

    column = {n: i for i, n in enumerate(names)}
    jac: list[list[float]] = []
    for c in rows:
        eff, slopes = model.efficiency_and_slopes(traits(c))
        w = weights[source_of(c)]
        base = fit_obs(c, eff)
        rows_here = [[0.0] * len(names) for _ in base]
        for field, pairs in slopes.items():
            value = getattr(eff, field)
            bumped = fit_obs(c, replace(eff, **{field: value * (1.0 + STEP)}))
            for r, (o0, o1) in enumerate(zip(base, bumped, strict=True)):
                d0, d1 = (
                    clipped_log_ratio(o0.predicted, o0.measured),
                    clipped_log_ratio(o1.predicted, o1.measured),
                )
                d_field = w * (d1 - d0) / (value * STEP)
                for name, slope in pairs:
                    rows_here[r][column[name]] += d_field * slope
        jac += rows_here
    return np.array(jac, dtype=float).reshape(len(jac), len(names))


def prior_weight(name: str) -> float:
    """How hard a global is pulled toward its starting value (see SHARE_PRIOR_WEIGHT and the others)."""
    if name in SHARE_PARAMS:
        return SHARE_PRIOR_WEIGHT
    if name == "comm":
        return COMM_PRIOR_WEIGHT
    return AMD_PRIOR_WEIGHT if name.endswith("_amd") else PRIOR_WEIGHT


def fit(
    cases: Sequence[Case], start: ServingModel | None = None, max_nfev: int = MAX_EVALUATIONS
) -> ServingModel:
    """The parameters that best explain `cases` (a warm `start` shortens refits on folds)."""
    from scipy.optimize import least_squares

    rows = list(cases)
    engines = sorted({c.engine for c in rows})
    counts = Counter(source_of(c) for c in rows)
    weights = {s: 1.0 / math.sqrt(n) for s, n in counts.items()}
    base = start or initial()
    x0 = [base.params.get(k, 0.0) for k in GLOBALS]
    for e in engines:
        x0 += [base.engines.get(e, {}).get(k, 0.0) for k in ENGINE_TERMS]
    current = {c.engine for c in rows if c.ttft and not traits(c).legacy}
    ridge = [
        HELD_RIDGE if t == "request" and e not in current else math.sqrt(ENGINE_RIDGE[t])
        for e in engines
        for t in ENGINE_TERMS
    ]

    start0 = initial().params
    pull = [prior_weight(k) for k in GLOBALS]
    prior = [w * start0[k] for w, k in zip(pull, GLOBALS, strict=True)]
    names = list(GLOBALS) + [f"{e}/{t}" for e in engines for t in ENGINE_TERMS]
    n_global, per = len(GLOBALS), len(ENGINE_TERMS)

    def residuals(x: Sequence[float]) -> list[float]:
        model = _unpack(x, engines)
        pulls = [w * v - p for w, v, p in zip(pull, x[:n_global], prior, strict=True)]
        offsets = x[n_global:]
        centre = [
            CENTRE_WEIGHT * sum(offsets[i * per + t] for i in range(len(engines))) / len(engines)
            for t in range(per)
            if engines
        ]
        shrink = [r * v for r, v in zip(ridge, offsets, strict=True)]
        return residuals_of(model, rows, weights) + shrink + pulls + centre

    def jacobian(x: Sequence[float]) -> NDArray[Any]:
        import numpy as np

        data = jacobian_of(_unpack(x, engines), rows, weights, names)
        extra = np.zeros((len(names), len(names)))
        for i in range(len(names)):
            extra[i, i] = ridge[i - n_global] if i >= n_global else 0.0
        pulls = np.zeros((n_global, len(names)))
        for i in range(n_global):
            pulls[i, i] = pull[i]
        centre = np.zeros((per if engines else 0, len(names)))
        for t in range(per if engines else 0):
            for i in range(len(engines)):
                centre[t, n_global + i * per + t] = CENTRE_WEIGHT / len(engines)
        return np.vstack([data, extra[n_global:], pulls, centre])

    sol = least_squares(
        residuals, x0, jac=jacobian, loss="soft_l1", f_scale=0.3, method="trf", max_nfev=max_nfev
    )
    return _unpack([round(float(v), 5) for v in sol.x], engines)
