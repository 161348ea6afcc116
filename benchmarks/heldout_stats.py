"""Error statistics of the held-out benchmark: median error, within 2x, P10-P90 coverage, Kendall's tau."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Scored:
    """One row's measured figure, the tool's P50 and band (None when refused), and the baseline's figure."""

    row_id: str
    source: str
    family: str
    measured: float
    predicted: float | None
    p10: float | None = None
    p90: float | None = None
    baseline: float | None = None


def rel_error(predicted: float, measured: float) -> float:
    return abs(predicted / measured - 1.0)


def within_2x(predicted: float, measured: float) -> bool:
    ratio = predicted / measured
    return 0.5 <= ratio <= 2.0


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


@dataclass(frozen=True, slots=True)
class Summary:
    """The figures of one group of rows (None where no row gives them)."""

    rows: int
    answered: int
    median_error: float | None
    median_ratio: float | None
    within_2x: float | None
    coverage: float | None
    baseline_error: float | None
    closer_than_baseline: int

    @property
    def vs_baseline(self) -> float | None:
        if self.median_error is None or not self.baseline_error:
            return None
        return self.median_error / self.baseline_error


def summary(rows: Sequence[Scored]) -> Summary:
    """Median error, bias, within-2x share and coverage of the answered rows; the baseline on the same."""
    pairs = [(r, r.predicted) for r in rows if r.predicted is not None and r.predicted > 0]
    errors = [rel_error(p, r.measured) for r, p in pairs]
    banded = [r for r, _ in pairs if r.p10 is not None and r.p90 is not None]
    covered = [r for r in banded if (r.p10 or 0.0) <= r.measured <= (r.p90 or 0.0)]
    based = [(r, p, r.baseline) for r, p in pairs if r.baseline]
    return Summary(
        rows=len(rows),
        answered=len(pairs),
        median_error=_median(errors),
        median_ratio=_median([p / r.measured for r, p in pairs]),
        within_2x=sum(within_2x(p, r.measured) for r, p in pairs) / len(pairs) if pairs else None,
        coverage=len(covered) / len(banded) if banded else None,
        baseline_error=_median([rel_error(b, r.measured) for r, _, b in based if b]),
        closer_than_baseline=sum(
            rel_error(p, r.measured) < rel_error(b, r.measured) for r, p, b in based if b
        ),
    )


def balanced_median(rows: Sequence[Scored]) -> float | None:
    """Median over sources of each source's median error, so one large table does not decide the figure."""
    per_source = []
    for source in sorted({r.source for r in rows}):
        errs = [rel_error(r.predicted, r.measured) for r in rows if r.source == source and r.predicted]
        if errs:
            per_source.append(statistics.median(errs))
    return _median(per_source)


HEADER = (
    f"{'group':34} {'rows':>4} {'ans':>4} {'med err':>7} {'P50/meas':>8} {'<=2x':>6} {'P10-90':>6} "
    f"{'40%MFU':>7} {'ratio':>5} {'closer':>6}"
)


def line(name: str, rows: Sequence[Scored], with_baseline: bool = True) -> str:
    """One table line: the group's figures, and the 40% MFU baseline's when it has one."""
    s = summary(rows)
    ratio = "-" if s.median_ratio is None else f"{s.median_ratio:.2f}x"
    base = _pct(s.baseline_error) if with_baseline else "   -  "
    vs = "-" if s.vs_baseline is None or not with_baseline else f"{s.vs_baseline:.2f}"
    closer = str(s.closer_than_baseline) if with_baseline else "-"
    return (
        f"{name[:34]:34} {s.rows:>4} {s.answered:>4} {_pct(s.median_error):>7} {ratio:>8} "
        f"{_pct(s.within_2x):>6} {_pct(s.coverage):>6} {base:>7} {vs:>5} {closer:>6}"
    )


def kendall_tau(pairs: Iterable[tuple[float, float] | tuple[float, float, object]]) -> float | None:
    """Kendall's tau-b between measured and predicted orders, as `gpu-advisor model evaluate` computes it
    (advisor/learned/efficiency/evaluate.py): a pair tied in both orders counts in neither, a pair tied in one
    counts against that order's denominator only. A third element, where given, names the run's stated
    configuration: two runs of one configuration are tied in the measured order whatever their figures (their
    difference is the source's run-to-run noise, not a layout's effect). None when no pair is ordered in
    either, 0 when only one of the orders has an ordered pair."""
    items = list(pairs)
    concordant = discordant = tied_measured = tied_predicted = 0
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            same = len(items[i]) > 2 and len(items[j]) > 2 and items[i][2] == items[j][2]
            dm = 0.0 if same else items[i][0] - items[j][0]
            dp = items[i][1] - items[j][1]
            if dm == 0 and dp == 0:
                continue
            if dm == 0:
                tied_measured += 1
            elif dp == 0:
                tied_predicted += 1
            elif (dm > 0) == (dp > 0):
                concordant += 1
            else:
                discordant += 1
    ordered_m = concordant + discordant + tied_predicted
    ordered_p = concordant + discordant + tied_measured
    if not ordered_m and not ordered_p:
        return None
    if not ordered_m or not ordered_p:
        return 0.0  # one order has none: no agreement (model evaluate's 0)
    return (concordant - discordant) / math.sqrt(ordered_m * ordered_p)
