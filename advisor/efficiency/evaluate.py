"""Provides the efficiency model's evaluation: leave-one-GPU-out and leave-one-workload-out against a
constant-efficiency baseline (what analytic tools do), with pairwise rank accuracy and interval coverage."""

from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

from advisor.efficiency.features import Sample


@dataclass(frozen=True)
class Scores:
    """Errors of one cross-validation scheme."""

    scheme: str
    folds: int
    rows: int
    median_ape: float
    p90_ape: float
    baseline_median_ape: float
    baseline_p90_ape: float
    rank_accuracy: float
    baseline_rank_accuracy: float
    coverage_p10_p90: float | None
    above_speed_of_light: int


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ape(samples: Sequence[Sample], log_eff: Sequence[float]) -> list[float]:
    """Absolute percentage error of throughput, efficiency capped at 1."""
    return [abs(min(math.exp(p), 1.0) * s.sol - s.row.throughput) / s.row.throughput
            for s, p in zip(samples, log_eff)]


def rank_accuracy(samples: Sequence[Sample], log_eff: Sequence[float]) -> float:
    """Share of GPU pairs, within the same workload, precision, count and software, ordered as measured."""
    groups: dict[tuple[str, str, int, str], list[tuple[str, float, float]]] = {}
    for s, p in zip(samples, log_eff):
        key = (s.row.workload, s.row.precision, s.row.count, s.row.software)
        groups.setdefault(key, []).append((s.row.gpu, min(math.exp(p), 1.0) * s.sol, s.row.throughput))
    right = total = 0
    for members in groups.values():
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                gi, pi, mi = members[i]
                gj, pj, mj = members[j]
                if gi == gj or mi == mj:
                    continue
                total += 1
                right += (pi > pj) == (mi > mj)
    return right / total if total else float("nan")


def cross_validate(samples: Sequence[Sample], group: Callable[[Sample], str],
                   fit_predict: Callable[[list[int], list[int]], list[float]]) -> list[float]:
    """Out-of-fold log-efficiency predictions: each group predicted by a model that never saw it."""
    oof = [0.0] * len(samples)
    keys = sorted({group(s) for s in samples})
    for key in keys:
        test = [i for i, s in enumerate(samples) if group(s) == key]
        train = [i for i, s in enumerate(samples) if group(s) != key]
        for i, p in zip(test, fit_predict(train, test)):
            oof[i] = p
    return oof


def score(scheme: str, samples: Sequence[Sample], group: Callable[[Sample], str],
          fit_predict: Callable[[list[int], list[int]], list[float]],
          interval: tuple[float, float] | None = None) -> tuple[Scores, list[float]]:
    """Cross-validate the model and the constant baseline under one grouping."""
    oof = cross_validate(samples, group, fit_predict)
    logs = [math.log(min(max(s.efficiency, 1e-4), 1.0)) for s in samples]

    def constant(train: list[int], test: list[int]) -> list[float]:
        c = statistics.median(logs[i] for i in train)
        return [c] * len(test)

    base = cross_validate(samples, group, constant)
    errors, base_errors = ape(samples, oof), ape(samples, base)
    coverage = None
    if interval is not None:
        lo, hi = interval
        coverage = sum(1 for s, p in zip(samples, oof)
                       if p + lo <= math.log(max(s.efficiency, 1e-9)) <= p + hi) / len(samples)
    return Scores(
        scheme=scheme, folds=len({group(s) for s in samples}), rows=len(samples),
        median_ape=statistics.median(errors), p90_ape=percentile(errors, 90),
        baseline_median_ape=statistics.median(base_errors), baseline_p90_ape=percentile(base_errors, 90),
        rank_accuracy=rank_accuracy(samples, oof), baseline_rank_accuracy=rank_accuracy(samples, base),
        coverage_p10_p90=coverage, above_speed_of_light=sum(1 for p in oof if p > 0.0),
    ), oof


def scores_table(scores: Sequence[Scores]) -> str:
    """The evaluation as a text table."""
    from advisor.cli.output import table

    rows = []
    for s in scores:
        rows.append([s.scheme, s.folds, s.rows, f"{s.median_ape:.1%}", f"{s.p90_ape:.1%}",
                     f"{s.baseline_median_ape:.1%}", f"{s.baseline_p90_ape:.1%}",
                     f"{s.baseline_median_ape / s.median_ape:.1f}x", f"{s.rank_accuracy:.1%}",
                     f"{s.baseline_rank_accuracy:.1%}",
                     "-" if s.coverage_p10_p90 is None else f"{s.coverage_p10_p90:.0%}"])
    return table(["held out", "folds", "rows", "median err", "P90 err", "const. median", "const. P90",
                  "gain", "rank acc.", "const. rank", "P10-P90 cover"], rows, right=range(1, 11))


def evaluate_cli(args: argparse.Namespace) -> int:
    """`gpu-advisor model evaluate`: refit per fold and print the figures."""
    from advisor.catalog import load_knowledge
    from advisor.efficiency.train import evaluation

    knowledge = load_knowledge()
    scores, notes = evaluation(knowledge)
    if (args.format or "table") == "json":
        print(json.dumps({"scores": [asdict(s) for s in scores], "notes": notes}, indent=2))
    else:
        print(scores_table(scores))
        print("\n".join(notes))
    return 0
