"""Provides the figures of a design over seeded replications, each with a 95% confidence interval, and the
guide's targets they are judged against."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from advisor.fleet.sim import HOURS_PER_WEEK, Tally

# Student's t at 97.5% by degrees of freedom (two-sided 95% intervals); 1.96 past 30.
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    25: 2.060,
    30: 2.042,
}
CLASS_NAMES = {0: "urgent", 1: "regular", 2: "batch", 3: "development"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Ci:
    """A mean over replications with its 95% confidence interval."""

    mean: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Ci:
        """Mean and t-interval of the replications' values."""
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            return cls(mean=math.nan, low=math.nan, high=math.nan)
        m = statistics.fmean(finite)
        if len(finite) < 2:
            return cls(mean=m, low=m, high=m)
        df = len(finite) - 1
        t = _T975.get(df) or (_T975[max(k for k in _T975 if k <= df)] if df < 30 else 1.96)
        half = t * statistics.stdev(finite) / math.sqrt(len(finite))
        # Every figure here is a count, share, time or energy: an interval never reaches below zero.
        floor = 0.0 if min(finite) >= 0 else -math.inf
        return cls(mean=m, low=max(floor, m - half), high=m + half)


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile; NaN when there is no value."""
    if not values:
        return math.nan
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Draw:
    """Electric draw of one pool: W per busy GPU by day and under the night cap, and the PUE."""

    day_w: float
    night_w: float
    pue: float


@dataclass(slots=True)
class RunFigures:
    """One replication's figures."""

    utilisation: float
    utilisation_by_pool: dict[str, float]
    wait_p50_min: dict[str, float]
    wait_p95_min: dict[str, float]
    missed_fraction: float
    energy_kwh: float
    gflops_per_w: float
    failures_per_gpu_month: float
    serving_short: float
    train_gpu_hours: float
    inference_gpu_hours: float
    week_profile: list[float]
    gpu_hours: dict[tuple[str, int], float]
    busy_kwh_by_pool: dict[str, float]


def figures(t: Tally, draws: dict[str, Draw], serving_tflop: float, hours_per_month: float) -> RunFigures:
    """The figures of one run; energy from busy GPU-hours at each pool's day and night draw."""
    total_gpus = sum(t.gpus.values())
    busy = {p: sum(b) for p, b in t.busy_by_hour.items()}
    it_kwh = {
        p: ((busy[p] - t.capped_busy[p]) * d.day_w + t.capped_busy[p] * d.night_w) / 1000
        for p, d in draws.items()
    }
    kwh = sum(it_kwh[p] * draws[p].pue for p in draws)
    joules = sum(it_kwh.values()) * 3.6e6
    weeks = t.hours / HOURS_PER_WEEK
    profile = [
        sum(t.busy_by_hour[p][h] for p in t.busy_by_hour) / (weeks * total_gpus)
        for h in range(HOURS_PER_WEEK)
    ]
    train = sum(h for (_, c), h in t.gpu_hours.items() if c in (0, 1, 3))
    infer = sum(h for (_, c), h in t.gpu_hours.items() if c in (2, -1))
    short = t.serving_short_h / t.serving_need_h if t.serving_need_h else 0.0
    tflop = t.tflop + serving_tflop * (1.0 - short)
    return RunFigures(
        utilisation=sum(busy.values()) / (total_gpus * t.hours),
        utilisation_by_pool={p: busy[p] / (t.gpus[p] * t.hours) for p in busy},
        wait_p50_min={CLASS_NAMES[c]: quantile(w, 0.5) * 60 for c, w in t.waits.items() if c in CLASS_NAMES},
        wait_p95_min={CLASS_NAMES[c]: quantile(w, 0.95) * 60 for c, w in t.waits.items() if c in CLASS_NAMES},
        missed_fraction=t.missed / t.with_deadline if t.with_deadline else 0.0,
        energy_kwh=kwh,
        gflops_per_w=tflop * 1e3 / joules if joules else math.nan,
        failures_per_gpu_month=t.failures / (total_gpus * t.hours / hours_per_month),
        serving_short=short,
        train_gpu_hours=train,
        inference_gpu_hours=infer,
        week_profile=profile,
        gpu_hours=dict(t.gpu_hours),
        busy_kwh_by_pool={p: it_kwh[p] * draws[p].pue for p in draws},
    )
