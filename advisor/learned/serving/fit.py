"""Fit the serving model's parameters to measured rows (training time only: needs scipy, shipped with
scikit-learn)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.learned.serving.data import Case
from advisor.learned.serving.model import (
    DECODE_FEATURES,
    DEFAULT_ENGINE,
    PREFILL_FEATURES,
    Config,
    ServingModel,
)
from advisor.physics.serving import offline_output_tok_s, prefill_s

FIT_KINDS = ("offline", "static", "ttft-bs1")
SEED = 0  # recorded for the metadata: the fit is deterministic (fixed start, no random draws)


def config_of(c: Case) -> Config:
    return Config(engine=c.engine, precision=c.precision, tp=c.tp, isl=c.isl, osl=c.osl, moe=c.moe)


def predicted(model: ServingModel, c: Case) -> tuple[float, float]:
    """(predicted, measured) of the figure a row measures: output tokens/s, or TTFT in seconds."""
    cfg = config_of(c)
    if c.kind == "ttft-bs1":
        assert c.ttft_ms is not None
        return prefill_s(c.shape, c.hw, c.isl) / model.efficiency(cfg, "prefill"), c.ttft_ms / 1000.0
    assert c.output_tok_s is not None
    if c.kind == "static" and c.batch:
        tput = offline_output_tok_s(
            c.shape,
            c.hw,
            c.precision,
            c.isl,
            c.osl,
            c.batch,
            model.efficiency(cfg, "prefill"),
            model.efficiency(cfg, "decode"),
        )
    else:
        tput = model.max_output_tok_s(cfg, c.shape, c.hw)
    return tput, c.output_tok_s


def usable(cases: Sequence[Case]) -> list[Case]:
    """Rows a fit can use: a measured kind, and at least one sequence fits."""
    out = []
    for c in cases:
        if c.kind not in FIT_KINDS:
            continue
        if (
            c.kind == "offline"
            and ServingModel({}, {}, {}, {}, {}).max_output_tok_s(config_of(c), c.shape, c.hw) <= 0
        ):
            continue
        out.append(c)
    return out


def _unpack(x: Sequence[float], engines: list[str], constant: bool) -> ServingModel:
    p = dict(zip(PREFILL_FEATURES, x[: len(PREFILL_FEATURES)], strict=True))
    d = dict(
        zip(
            DECODE_FEATURES,
            x[len(PREFILL_FEATURES) : len(PREFILL_FEATURES) + len(DECODE_FEATURES)],
            strict=True,
        )
    )
    if constant:  # the baseline: one efficiency per regime, every feature but the intercept held at zero
        p = {k: (v if k == "intercept" else 0.0) for k, v in p.items()}
        d = {k: (v if k == "intercept" else 0.0) for k, v in d.items()}
    rest = x[len(PREFILL_FEATURES) + len(DECODE_FEATURES) :]
    eng = {DEFAULT_ENGINE: {"prefill": 0.0, "decode": 0.0}}
    for i, e in enumerate(e for e in engines if e != DEFAULT_ENGINE):
        eng[e] = {"prefill": rest[2 * i], "decode": rest[2 * i + 1]}
    return ServingModel(prefill=p, decode=d, engines=eng, interval={}, meta={})


def fit(cases: Sequence[Case], constant: bool = False) -> ServingModel:
    """Least squares on log(predicted / measured), soft-L1 loss (robust to a mis-transcribed cell)."""
    from scipy.optimize import least_squares

    rows = usable(cases)
    engines = sorted({c.engine for c in rows} | {DEFAULT_ENGINE})
    n = len(PREFILL_FEATURES) + len(DECODE_FEATURES) + 2 * (len(engines) - 1)

    def residuals(x):
        m = _unpack(x, engines, constant)
        out = []
        for c in rows:
            pred, meas = predicted(m, c)
            out.append(math.log(max(pred, 1e-12) / meas))
        return out

    x0 = [0.0] * n
    sol = least_squares(residuals, x0, loss="soft_l1", f_scale=0.3, method="trf", max_nfev=200)
    model = _unpack([round(float(v), 6) for v in sol.x], engines, constant)
    return model
