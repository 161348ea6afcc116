"""Leave-one-GPU-out and leave-one-model-out scores of the serving model against a constant-efficiency
baseline."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from advisor.learned.serving.data import Case
from advisor.learned.serving.fit import config_of, fit, predicted, usable
from advisor.learned.serving.model import ServingModel
from advisor.learned.serving.queueing import at_rate


@dataclass(frozen=True)
class Scores:
    """Error figures of one model on held-out rows."""

    rows: int
    median: float
    p90: float
    within_2x: float
    coverage: float | None


def quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


def log_residuals(model: ServingModel, cases: Sequence[Case]) -> list[float]:
    return [math.log(p / m) if p > 0 else -10.0 for p, m in (predicted(model, c) for c in cases)]


def scores(pairs: list[tuple[float, float, float, float]]) -> Scores:
    """pairs: (predicted, measured, p10, p90) per held-out row."""
    errs = [abs(p - m) / m for p, m, _, _ in pairs]
    within = [max(p / m, m / p) <= 2.0 if p > 0 else False for p, m, _, _ in pairs]
    cover = [lo <= m <= hi for _, m, lo, hi in pairs]
    return Scores(
        len(pairs),
        statistics.median(errs),
        quantile(errs, 0.9),
        sum(within) / len(within),
        sum(cover) / len(cover),
    )


def held_out(cases: Sequence[Case], key: Callable[[Case], str], constant: bool) -> Scores:
    """Fit without each group in turn; predict the group; interval = P10-P90 of the fold's training
    residuals."""
    rows = usable(cases)
    pairs = []
    for group in sorted({key(c) for c in rows}):
        train = [c for c in rows if key(c) != group]
        test = [c for c in rows if key(c) == group]
        if not train or not test:
            continue
        model = fit(train, constant=constant)
        res = log_residuals(model, train)
        q10, q90 = -quantile(res, 0.9), -quantile(res, 0.1)  # measured/predicted = exp(-residual)
        for c in test:
            p, m = predicted(model, c)
            pairs.append((p, m, p * math.exp(q10), p * math.exp(q90)))
    return scores(pairs)


def online_check(model: ServingModel, cases: Sequence[Case]) -> tuple[int, float, float]:
    """Median relative error of TTFT and ITL at the measured request rate (finite-rate online rows)."""
    ttft, itl = [], []
    for c in cases:
        if c.kind != "online" or c.request_rate is None or c.ttft_ms is None or c.itl_ms is None:
            continue
        load = at_rate(model, config_of(c), c.shape, c.hw, c.request_rate)
        if math.isfinite(load.ttft_s):
            ttft.append(abs(load.ttft_s * 1000 - c.ttft_ms) / c.ttft_ms)
            itl.append(abs(load.tpot_s * 1000 - c.itl_ms) / c.itl_ms)
    if not ttft:
        return 0, math.nan, math.nan
    return len(ttft), statistics.median(ttft), statistics.median(itl)


def evaluation_rows(cases: Sequence[Case]) -> list[tuple[str, str, Scores]]:
    """(split, model name, scores) for both splits and both models."""
    out = []
    for split, key in (("leave-one-GPU-out", lambda c: c.gpu), ("leave-one-model-out", lambda c: c.model)):
        out.append((split, "learned", held_out(cases, key, constant=False)))
        out.append((split, "constant efficiency", held_out(cases, key, constant=True)))
    return out


def evaluation_report(cases: Sequence[Case] | None = None, model: ServingModel | None = None) -> str:
    """The serving evaluation as text, for `gpu-advisor model evaluate` and benchmarks."""
    from advisor.learned.serving.data import load_cases
    from advisor.learned.serving.model import load_model

    if cases is None:
        cases, _ = load_cases()
    model = model or load_model()
    lines = [
        "Serving (TensorRT-LLM measured rows; throughput and batch-1 TTFT)",
        f"{'split':22s} {'model':20s} {'rows':>5s} {'median':>7s} {'P90':>7s} {'<=2x':>6s} "
        f"{'P10-P90 cov':>11s}",
    ]
    for split, name, s in evaluation_rows(cases):
        lines.append(
            f"{split:22s} {name:20s} {s.rows:5d} {s.median:7.1%} {s.p90:7.1%} {s.within_2x:6.0%} "
            f"{(s.coverage or 0):11.0%}"
        )
    if model is not None:
        n, e_ttft, e_itl = online_check(model, cases)
        lines.append(
            f"queueing at measured request rates ({n} online rows, shipped model): "
            f"median TTFT error {e_ttft:.0%}, median ITL error {e_itl:.0%}"
        )
    return "\n".join(lines)
