"""Provides the efficiency model's evaluation: held-out sources and GPUs, against two baselines, same rows.

Baselines, each fitted on the training folds only:
- constant MFU: throughput = c(precision class) x peak x GPUs / training FLOPs per item, c the median measured
  MFU of the training rows of the same family and precision class (fp8, 16-bit, 32-bit) - what analytic tools
  do;
- physical: throughput = k x the core's speed of light (roofline, pipeline bubble, exposed communication of
the
  stated layout), k one global median efficiency of the training rows of the same family.
Intervals are split-conformal: a held-out group's P10-P90 come from the held-out residuals of the other
groups.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from advisor.learned.efficiency.bounds import PRECISION_CLASS
from advisor.learned.efficiency.samples import Sample

__all__ = ["PRECISION_CLASS", "Scores", "apes", "percentile", "target"]

FitPredict = Callable[[list[int], list[int]], list[float]]


@dataclass(frozen=True, slots=True, repr=False)
class Scores:
    """Errors of one held-out scheme on one family's rows (or one source's rows of it)."""

    family: str
    scheme: str
    subset: str
    """'all' or the source whose rows these are."""
    folds: int
    rows: int
    median_ape: float
    p90_ape: float
    within_2x: float
    rank_accuracy: float
    coverage_p10_p90: float | None
    const_median_ape: float
    const_p90_ape: float
    const_within_2x: float
    const_rank_accuracy: float
    phys_median_ape: float
    phys_p90_ape: float
    phys_within_2x: float
    phys_rank_accuracy: float
    typical_median_ape: float | None = None
    """The median error of the typical P50 a user is shown (LLM rows; a vendor table's row is scored at its
    own family above)."""
    prev_median_ape: float | None = None
    """The previous estimator on the same folds: the speed of light (roofline, bubble, alpha-beta
    communication) x the training rows' median efficiency (None where the step is not composed)."""
    prev_p90_ape: float | None = None
    prev_rank_accuracy: float | None = None

    @property
    def gain(self) -> float:
        """How many times smaller the model's median error is than the constant-MFU baseline's."""
        return self.const_median_ape / self.median_ape if self.median_ape else float("inf")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def weighted_quantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of values with weights (step function, as split conformal uses)."""
    return sorted_quantile(sorted(zip(values, weights, strict=True)), q)


def sorted_quantile(pairs: Sequence[tuple[float, float]], q: float) -> float:
    """weighted_quantile() of (value, weight) pairs already sorted (a caller asking many levels of one set
    sorts it once)."""
    total = sum(w for _, w in pairs)
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= q * total - 1e-12:
            return v
    return pairs[-1][0]


# A run measured faster than its composed step: the tables price some operation slower than that stack ran
# it. Past this factor the run's own figures are in doubt (its FLOP count, its layout), not the tables.
RESIDUAL_CAP = 3.0


def target(s: Sample) -> float:
    """Log efficiency, capped at the roofline (above 1 the model's FLOP count of the workload is too high);
    against a step composed from measured operations, a residual capped at RESIDUAL_CAP."""
    return math.log(min(max(s.efficiency, 1e-4), RESIDUAL_CAP if s.composed else 1.0))


def apes(samples: Sequence[Sample], predicted: Sequence[float]) -> list[float]:
    """Absolute percentage error of predicted throughputs."""
    return [abs(p - s.row.throughput) / s.row.throughput for s, p in zip(samples, predicted, strict=True)]


def rank_accuracy(samples: Sequence[Sample], predicted: Sequence[float]) -> float:
    """Share of row pairs of one source, workload and precision whose per-GPU throughputs are ordered as
    measured."""
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for s, p in zip(samples, predicted, strict=True):
        key = (s.row.origin, s.row.workload, s.row.precision)
        groups.setdefault(key, []).append((p / s.row.count, s.row.throughput / s.row.count))
    right = total = 0
    for members in groups.values():
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                (pi, mi), (pj, mj) = members[i], members[j]
                if mi == mj:
                    continue
                total += 1
                right += (pi > pj) == (mi > mj)
    return right / total if total else float("nan")


def held_out(
    samples: Sequence[Sample],
    test_rows: Sequence[int],
    group: Callable[[Sample], str],
    fit_predict: FitPredict,
) -> dict[int, float]:
    """Log-efficiency predictions of test_rows, each by a model fitted without its whole group (all
    families)."""
    out: dict[int, float] = {}
    for key in sorted({group(samples[i]) for i in test_rows}):
        test = [i for i in test_rows if group(samples[i]) == key]
        train = [i for i, s in enumerate(samples) if group(s) != key]
        out.update(zip(test, fit_predict(train, test), strict=True))
    return out


def baselines(
    samples: Sequence[Sample], test_rows: Sequence[int], group: Callable[[Sample], str], family: str
) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """Throughputs of the constant-MFU, the physical (the core's step x the median efficiency) and the
    previous (the speed of light x the median efficiency) baselines, fitted without each row's group."""
    const, phys, prev = {}, {}, {}
    for key in sorted({group(samples[i]) for i in test_rows}):
        train = [s for s in samples if group(s) != key and s.family == family]
        k = statistics.median(math.log(s.efficiency) for s in train)
        k_prev = statistics.median(math.log(s.row.throughput / (s.old_sol or s.sol)) for s in train)
        by_class: dict[str, list[float]] = {}
        for s in train:
            by_class.setdefault(PRECISION_CLASS[s.row.precision], []).append(
                math.log(s.row.throughput / s.mfu_sol)
            )
        every = statistics.median(v for vs in by_class.values() for v in vs)
        for i in (i for i in test_rows if group(samples[i]) == key):
            s = samples[i]
            values = by_class.get(PRECISION_CLASS[s.row.precision])
            const[i] = math.exp(statistics.median(values) if values else every) * s.mfu_sol
            phys[i] = math.exp(k) * s.sol
            prev[i] = math.exp(k_prev) * (s.old_sol or s.sol)
    return const, phys, prev


def conformal_offsets(
    samples: Sequence[Sample],
    oof: dict[int, float],
    group: Callable[[Sample], str],
    exclude: str | None = None,
) -> tuple[float, float]:
    """P10 and P90 of held-out log residuals, each group weighted equally (and one group left out)."""
    counts: dict[str, int] = {}
    for i in oof:
        counts[group(samples[i])] = counts.get(group(samples[i]), 0) + 1
    rows = [i for i in oof if group(samples[i]) != exclude]
    resid = [target(samples[i]) - oof[i] for i in rows]
    weights = [1.0 / counts[group(samples[i])] for i in rows]
    return weighted_quantile(resid, weights, 0.10), weighted_quantile(resid, weights, 0.90)


def _covered(s: Sample, p: float, offsets: tuple[float, float]) -> bool:
    return p + offsets[0] - 1e-12 <= target(s) <= p + offsets[1] + 1e-12


def _scores(
    family: str,
    scheme: str,
    subset: str,
    folds: int,
    samples: Sequence[Sample],
    model: Sequence[float],
    const: Sequence[float],
    phys: Sequence[float],
    covered: Sequence[bool],
) -> Scores:
    e, c, p = apes(samples, model), apes(samples, const), apes(samples, phys)

    def share2x(pred: Sequence[float]) -> float:
        return sum(1 for s, v in zip(samples, pred, strict=True) if 0.5 <= v / s.row.throughput <= 2.0) / len(
            samples
        )

    return Scores(
        family,
        scheme,
        subset,
        folds,
        len(samples),
        statistics.median(e),
        percentile(e, 90),
        share2x(model),
        rank_accuracy(samples, model),
        sum(covered) / len(covered) if covered else None,
        statistics.median(c),
        percentile(c, 90),
        share2x(const),
        rank_accuracy(samples, const),
        statistics.median(p),
        percentile(p, 90),
        share2x(phys),
        rank_accuracy(samples, phys),
    )


def score_line(
    family: str,
    scheme: str,
    subset: str,
    folds: int,
    samples: Sequence[Sample],
    idx: Sequence[int],
    model: dict[int, float],
    const: dict[int, float],
    phys: dict[int, float],
    covered: dict[int, bool],
    typical: dict[int, float] | None = None,
    prev: dict[int, float] | None = None,
) -> Scores:
    """The scores of rows idx: model, baselines (throughputs by row) and interval coverage."""
    rows = [samples[i] for i in idx]
    line = _scores(
        family,
        scheme,
        subset,
        folds,
        [samples[i] for i in idx],
        [model[i] for i in idx],
        [const[i] for i in idx],
        [phys[i] for i in idx],
        [covered[i] for i in idx],
    )
    if prev is not None:
        e = apes(rows, [prev[i] for i in idx])
        line = replace(
            line,
            prev_median_ape=statistics.median(e),
            prev_p90_ape=percentile(e, 90),
            prev_rank_accuracy=rank_accuracy(rows, [prev[i] for i in idx]),
        )
    if typical is None:
        return line
    errs = apes(rows, [typical[i] for i in idx])
    return replace(line, typical_median_ape=statistics.median(errs))


def evaluate_scheme(
    samples: Sequence[Sample],
    family: str,
    scheme: str,
    group: Callable[[Sample], str],
    fit_predict: FitPredict,
) -> tuple[list[Scores], dict[int, float]]:
    """One scheme on one family (the trees on the other rows): pooled scores, and the held-out logs."""
    rows = [i for i, s in enumerate(samples) if s.family == family]
    oof = held_out(samples, rows, group, fit_predict)
    const, phys, _ = baselines(samples, rows, group, family)
    offsets = {
        key: conformal_offsets(samples, oof, group, exclude=key) for key in {group(samples[i]) for i in rows}
    }
    covered = {i: _covered(samples[i], oof[i], offsets[group(samples[i])]) for i in rows}
    model = {i: min(math.exp(oof[i]), 1.0) * samples[i].sol for i in rows}
    line = score_line(family, scheme, "all", len(offsets), samples, rows, model, const, phys, covered)
    return [line], oof


def layout_groups(samples: Sequence[Sample], rows: Sequence[int]) -> dict[str, list[int]]:
    """Rows of one source that vary only the layout (same model, GPU, count, precision, sequence, global
    batch and stack; different tp, pp, cp, ep, sharding, recomputation or micro-batch), by group label."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for i in rows:
        r = samples[i].row
        key = (r.origin, r.workload, r.gpu, r.count, r.precision, r.seq_len, r.global_batch, r.stack)
        groups.setdefault(key, []).append(i)
    out = {}
    for group_key, members in groups.items():
        layouts = {_layout_key(samples[i]) for i in members}
        if len(members) >= 2 and len(layouts) >= 2:
            origin, workload, gpu, count = group_key[0], group_key[1], group_key[2], group_key[3]
            out[f"{origin}: {workload} on {gpu} x{count}"] = members
    return out


def _layout_key(s: Sample) -> tuple[object, ...]:
    r = s.row
    return (r.tp, r.pp, r.cp, r.ep, r.virtual, r.zero, r.recompute, r.micro_batch)


def kendall_tau(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Kendall's tau-b of two orderings (1: the same order, -1: reversed; 0 when one has no order)."""
    concordant = discordant = ties_p = ties_m = 0
    n = len(predicted)
    for i in range(n):
        for j in range(i + 1, n):
            dp, dm = predicted[i] - predicted[j], measured[i] - measured[j]
            if dp == 0 and dm == 0:
                continue
            if dp == 0:
                ties_p += 1
            elif dm == 0:
                ties_m += 1
            elif (dp > 0) == (dm > 0):
                concordant += 1
            else:
                discordant += 1
    pairs_p = concordant + discordant + ties_p
    pairs_m = concordant + discordant + ties_m
    if not pairs_p or not pairs_m:
        return 0.0
    return (concordant - discordant) / math.sqrt(pairs_p * pairs_m)
