"""Provides the user's stored runs as the multiplier reads them: configuration and log(measured / base),
kept only when the base prediction was made by the model in use (a changed model is re-predicted by
`gpu-advisor calibrate --refresh`, never silently mixed)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.run_store import StoredRun, load_runs, load_serving_fit

METRICS = {"training": ("throughput",), "serving": ("output_tok_s", "ttft_ms", "tpot_ms")}
SERVING_METRIC = {"output_tok_s": "throughput", "ttft_ms": "ttft", "tpot_ms": "tpot"}


@dataclass(frozen=True, slots=True, repr=False)
class RunSet:
    """The runs of one profile that apply to one GPU and stack or engine, per metric, and those left out."""

    profile: str
    ratios: dict[str, tuple[tuple[dict[str, float], float], ...]]
    runs: tuple[StoredRun, ...]
    stale: int
    """Runs whose base was predicted by another model (left out until --refresh)."""


def log_ratio(run: StoredRun, metric: str, fitted: dict[str, float] | None = None) -> float | None:
    """log(measured / predicted) of one metric of a run, None when either is missing: against the base
    prediction, or (fitted) the figures simulated at the efficiencies the profile's results moved (what is
    left for the residual multiplier)."""
    m, b = run.measured.get(metric), (fitted or run.base).get(metric)
    if not m or not b or m <= 0 or b <= 0:
        return None
    return math.log(m / b)


def run_set(profile: str, kind: str, gpu: str, key: str, base_model: str) -> RunSet | None:
    """The profile's runs of this kind on this GPU and stack (engine) whose base is base_model's; None when
    the profile has no run of them."""
    every = [r for r in load_runs(profile) if r.kind == kind and r.gpu == gpu and r.key == key]
    if not every:
        return None
    fresh = tuple(r for r in every if r.base_model == base_model)
    fits = load_serving_fit(profile, gpu, key) if kind == "serving" else None
    if fits is not None:
        from advisor.learned.calibration.serving import fit_name

        fitted = fits.fitted if fits.base_model == fit_name(base_model) else {}
    else:
        fitted = {}
    ratios: dict[str, tuple[tuple[dict[str, float], float], ...]] = {}
    for metric in METRICS[kind]:
        pairs = [(r.point, x) for r in fresh if (x := log_ratio(r, metric, fitted.get(r.id))) is not None]
        ratios[metric] = tuple(pairs)
    return RunSet(profile, ratios, fresh, len(every) - len(fresh))
