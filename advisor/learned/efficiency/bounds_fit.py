"""Provides the bounds of the efficiency model from measured runs: the highest efficiency per family, GPU
generation and precision class, the typical MFU per precision class, and the measured range."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from advisor.learned.efficiency.bounds import PRECISION_CLASS, RANGE_DIMENSIONS, Bounds, Cap, Where
from advisor.learned.efficiency.evaluate import RESIDUAL_CAP
from advisor.learned.efficiency.features import FEATURES
from advisor.learned.efficiency.gbdt import ExportedModel
from advisor.learned.efficiency.linear import TYPICAL, llm_inputs, plan_of
from advisor.learned.efficiency.samples import Sample

_PARAMS = FEATURES.index("log_params")
_TOKENS = FEATURES.index("log_items_per_gpu_step")
_COUNT = FEATURES.index("log_count")


def run_label(s: Sample) -> str:
    """A measured run as the output names it."""
    r = s.row
    ref = f" {r.row_ref}" if r.row_ref else ""
    against = "its step composed from measured operations" if s.composed else "speed of light"
    return f"{r.origin}{ref} ({r.workload}, {r.gpu} x{r.count}, {s.efficiency:.0%} of {against})"


def point_of(s: Sample) -> tuple[float, ...]:
    """A measured LLM run's RANGE_DIMENSIONS values."""
    f = s.features
    return (f[_PARAMS], math.log(max(s.row.seq_len, 1)), f[_TOKENS], f[_COUNT])


def where_of(s: Sample) -> Where:
    """What the bounds read of a measured run."""
    point = point_of(s) if s.family == "llm" else ()
    return Where(s.family, s.generation, s.row.precision, math.log(s.mfu_sol / s.sol), point, s.composed)


def fit_bounds(samples: Sequence[Sample], p50_caps: bool = False) -> Bounds:
    """The bounds these runs support: caps, the constant-MFU prior and the measured range; with p50_caps,
    the caps of the runs that fit bounding the P50 only (not shipped: held out by source they raise the
    median error, source-balanced 21.4% -> 21.6%, vendor tables 11.5% -> 12.1%, coverage unchanged)."""
    llm = [s for s in samples if s.family == "llm"]
    points = [point_of(s) for s in llm]
    ranges = {
        name: (min(p[i] for p in points), max(p[i] for p in points))
        for i, name in enumerate(RANGE_DIMENSIONS)
        if points
    }
    fitting = _caps(samples, only_fitting=True) if p50_caps else {}
    return Bounds(_caps(samples), _prior(llm), ranges, _prior_residual(llm), fitting)


def _caps(samples: Sequence[Sample], *, only_fitting: bool = False) -> dict[str, Cap]:
    """The highest efficiency per family, generation and precision class. A run measured above its speed of
    light sets no cap: its label says the core's physics misses something of it, not that plans may exceed
    the speed of light (against a composed step, a run past RESIDUAL_CAP of it). `only_fitting`: nor does a
    run the memory model refuses even at its P10 (Sample.fits): those caps bound the P50 only
    (Bounds.p50_caps); bounding the P90 by them too held it below the vendor tables, whose coverage held
    out by source fell from 90% to 72% (docs/step-model.md)."""
    caps: dict[str, Cap] = {}
    for s in samples:
        if s.efficiency > (RESIDUAL_CAP if s.composed else 1.0) or (only_fitting and not s.fits):
            continue
        key = f"{s.family}|{s.generation}|{PRECISION_CLASS[s.row.precision]}"
        if key not in caps or s.efficiency > caps[key].efficiency:
            caps[key] = Cap(round(s.efficiency, 4), run_label(s))
    return caps


def _prior(llm: Sequence[Sample]) -> dict[str, float]:
    """The typical (non-vendor) runs' median MFU per precision class; a class no typical run used (FP8) takes
    every run's."""
    typical = [s for s in llm if s.row.source_family != "vendor"]
    prior: dict[str, float] = {}
    for pc in sorted(set(PRECISION_CLASS.values())):
        mfus = [s.row.throughput / s.mfu_sol for s in typical if PRECISION_CLASS[s.row.precision] == pc] or [
            s.row.throughput / s.mfu_sol for s in llm if PRECISION_CLASS[s.row.precision] == pc
        ]
        if mfus:
            prior[pc] = round(min(statistics.median(mfus), 1.0), 4)
    return prior


def sample_efficiency(model: ExportedModel, s: Sample) -> float:
    """The shipped model's P50 efficiency of a measured run as a prediction gives it: the LLM model at the
    typical family (or the trees), bounded."""
    if s.family == "llm" and model.linear is not None:
        log50 = model.linear.predict_log(llm_inputs(s.features, math.log(s.sol / s.mfu_sol), TYPICAL))
        log50 += model.linear.stack_offset(s.row.stack)
        offsets = model.linear.interval_of(s.features, plan_of(s))
    else:
        log50 = model.predict_log(s.features)
        offsets = model.interval.get(s.family, model.interval["all"])
    bounds = model.bounds or Bounds({}, {}, {})
    return bounds.interval(log50, offsets, where_of(s))[1]


def _prior_residual(llm: Sequence[Sample]) -> dict[str, float]:
    """The typical (non-vendor) composed runs' median measured / composed step per precision class (every
    composed run's where no typical one used the class)."""
    composed = [s for s in llm if s.composed]
    typical = [s for s in composed if s.row.source_family != "vendor"]
    out: dict[str, float] = {}
    for pc in sorted(set(PRECISION_CLASS.values())):
        values = [s.efficiency for s in typical if PRECISION_CLASS[s.row.precision] == pc] or [
            s.efficiency for s in composed if PRECISION_CLASS[s.row.precision] == pc
        ]
        if values:
            out[pc] = round(min(statistics.median(values), RESIDUAL_CAP), 4)
    return out
