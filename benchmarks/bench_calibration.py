"""Calibration against published runs (prints figures; issue 27's goals).

Usage: python benchmarks/bench_calibration.py [--serving-only | --training-only]

Training: every run of knowledge/llm_benchmarks.csv is predicted as a user states it (model, GPU, count,
precision, sequence, micro-batch and the published layout held; the rest searched) by the shipped,
uncalibrated model. Each source then stands for a user: calibrate on its first predictable run, predict its
other runs with the same multiplier predict applies (advisor/learned/calibration/multiplier.py: the runs'
configuration distance, shrinkage toward 1), and compare median errors before and after; a run on another
GPU or stack than the calibration run is not calibrated (as in the product: one multiplier per GPU x stack).
The calibration run's own error after is the figure at distance 0. Also printed: the empirical-Bayes spreads
the multiplier's priors are set from (between groups: TAU; within a group: SPREAD).

Serving: each deployment of knowledge/serving_benchmarks.csv measured at several concurrencies (same source,
model, GPU, count, TP, engine, lengths, precision): calibrate on its lowest concurrency, predict the others;
errors on output throughput and TTFT before and after.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass

from advisor.answer.calibration_runs import figures
from advisor.answer.predict import predict
from advisor.catalog import load_knowledge
from advisor.job.inputs import Workload
from advisor.learned.calibration.multiplier import SERVING_SCALES, TRAINING_SCALES, correction
from advisor.learned.calibration.points import serving_point, training_point
from advisor.learned.efficiency.explicit import workload_of_run
from advisor.learned.efficiency.runs import read_llm_runs
from advisor.learned.efficiency.select import efficiency_model
from advisor.question.errors import AdvisorError


@dataclass(frozen=True, slots=True)
class Case:
    """One published run with its uncalibrated prediction."""

    group: str
    cluster: str
    point: dict[str, float]
    log_ratio: dict[str, float]


def training_cases(knowledge, model) -> tuple[list[Case], int]:
    runs, _ = read_llm_runs(knowledge)
    cases, refused = [], 0
    for run in runs:
        try:
            w = workload_of_run(run)
            pred = predict(knowledge, w, run.gpu, run.count, None, model)
        except (AdvisorError, ValueError):
            refused += 1
            continue
        if pred.throughput is None or run.throughput <= 0:
            refused += 1
            continue
        job_seq = run.seq_len or 2048
        point = training_point(
            params=_params(knowledge, run.workload),
            seq_len=job_seq,
            kind=run.kind,
            precision=pred.precision,
            count=run.count,
            layout=pred.layout,
        )
        ratio = math.log(run.throughput / pred.throughput.value)
        cases.append(Case(run.origin, f"{run.gpu}|{run.stack}", point, {"training": ratio}))
    return cases, refused


def _params(knowledge, model_id: str) -> float:
    m = knowledge.model(model_id)
    return float(getattr(m, "params", 0) or 1e9)


def _err(log_ratio: float) -> float:
    """|predicted / measured - 1| for a prediction off by log_ratio = log(measured / predicted)."""
    return abs(math.exp(-log_ratio) - 1.0)


def calibrate_groups(
    cases: list[Case], metric: str, scales, by_cluster: bool, first: int = 1
) -> tuple[list, list, list, int]:
    """(before, after) errors of the other runs, the calibration runs' errors after, and the groups used; each
    group calibrated on its first `first` runs."""
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[f"{c.group}|{c.cluster}" if by_cluster else c.group].append(c)
    name = _metric(metric)
    before, after, own, used = [], [], [], 0
    for members in groups.values():
        if len(members) <= first:
            continue
        used += 1
        cal, rest = members[:first], members[first:]
        cluster = cal[0].cluster
        pairs = [(c.point, c.log_ratio[metric]) for c in cal if c.cluster == cluster]
        for c in cal[:1]:
            own.append(_err(c.log_ratio[metric] - correction(c.point, pairs, name, scales).log_mean))
        for c in rest:
            before.append(_err(c.log_ratio[metric]))
            if c.cluster != cluster:  # another GPU or stack: the product does not calibrate it
                after.append(_err(c.log_ratio[metric]))
                continue
            after.append(_err(c.log_ratio[metric] - correction(c.point, pairs, name, scales).log_mean))
    return before, after, own, used


def _metric(metric: str) -> str:
    return {"output_tok_s": "throughput", "ttft_ms": "ttft"}.get(metric, metric)


def spreads(cases: list[Case], metric: str) -> tuple[float, float]:
    """Between-group spread of the groups' mean log ratio, and the pooled within-group spread."""
    groups: dict[str, list[float]] = defaultdict(list)
    for c in cases:
        if metric in c.log_ratio:
            groups[f"{c.group}|{c.cluster}"].append(c.log_ratio[metric])
    means = [statistics.fmean(v) for v in groups.values()]
    within = [(x - statistics.fmean(v)) ** 2 for v in groups.values() if len(v) > 1 for x in v]
    dof = sum(len(v) - 1 for v in groups.values() if len(v) > 1)
    return statistics.pstdev(means), math.sqrt(sum(within) / dof) if dof else float("nan")


def fit_priors(cases: list[Case], metric: str, scales) -> tuple[float, float, float, float]:
    """The (TAU, SPREAD, length multiplier) of highest marginal likelihood over the groups (each group a
    user: its runs' log ratios ~ N(0, TAU^2 + SPREAD^2 exp(-d^2 / 2 L^2) + NOISE^2 I)); numpy, here only."""
    import numpy as np

    from advisor.learned.calibration.multiplier import LENGTH, NOISE, distance

    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        if metric in c.log_ratio:
            groups[f"{c.group}|{c.cluster}"].append(c)
    data = []
    for members in groups.values():
        d = np.array(
            [[distance(a.point, b.point, scales) / LENGTH[_metric(metric)] for b in members] for a in members]
        )
        data.append((d, np.array([c.log_ratio[metric] for c in members])))
    best = (-math.inf, 0.0, 0.0, 0.0)
    for tau in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
        for spread in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8):
            for length in (0.25, 0.5, 1.0, 2.0):
                ll = 0.0
                for d, r in data:
                    k = tau**2 + spread**2 * np.exp(-0.5 * (d / length) ** 2) + NOISE**2 * np.eye(len(r))
                    _, logdet = np.linalg.slogdet(k)
                    ll += -0.5 * (logdet + r @ np.linalg.solve(k, r) + len(r) * math.log(2 * math.pi))
                if ll > best[0]:
                    best = (ll, tau, spread, length)
    return best[1], best[2], best[3], best[0]


def report(name: str, before, after, own, used: int, goal: str) -> None:
    b, a = statistics.median(before), statistics.median(after)
    print(
        f"{name}: {used} groups, {len(before)} other runs: median error before {b:.1%}, after {a:.1%} "
        f"({a / b:.2f}x); calibration runs after: median {statistics.median(own):.1%}, max {max(own):.1%}"
        f"  [{goal}]"
    )


def serving_cases(knowledge, model) -> tuple[list[Case], int]:
    import csv

    rows = list(csv.DictReader((knowledge.root / "serving_benchmarks.csv").open(encoding="utf-8")))
    cases, refused = [], 0
    for r in rows:
        if r["kind"] != "concurrency" or not r["concurrency"] or not r["output_tok_s"]:
            continue
        try:
            conc, count, tp = int(float(r["concurrency"])), int(r["count"]), int(r["tp"] or 1)
            w = Workload(
                model=r["model"],
                kind="inference",
                precision=r["precision"] or "auto",
                prompt_tokens=int(float(r["isl"])),
                output_tokens=int(float(r["osl"])),
                batch_size=max(1, conc // max(1, count // tp)),
                config={"engine": r["engine"], "tp": tp, "pp": int(r["pp"] or 1)},
            )
            pred = predict(knowledge, w, r["gpu"], count, None, model)
        except (AdvisorError, ValueError):
            refused += 1
            continue
        got = figures(pred, "serving") if pred.throughput is not None else {}
        ratios = {}
        if got.get("output_tok_s") and float(r["output_tok_s"]) > 0:
            ratios["output_tok_s"] = math.log(float(r["output_tok_s"]) / got["output_tok_s"])
        if r["ttft_ms"] and got.get("ttft_ms") and (r["ttft_pctl"] in ("", "50", "p50", "median", "mean")):
            ratios["ttft_ms"] = math.log(float(r["ttft_ms"]) / got["ttft_ms"])
        if not ratios:
            refused += 1
            continue
        key = "|".join(
            r[k] for k in ("source", "model", "gpu", "count", "tp", "engine", "isl", "osl", "precision")
        )
        point = {
            **serving_point(
                params=_params(knowledge, r["model"]),
                count=count,
                tp=tp,
                load=conc,
                prompt=int(float(r["isl"])),
                output=int(float(r["osl"])),
                precision=pred.precision,
            ),
            "rate": 0.0,
        }
        cases.append(Case(key, r["engine"], point, ratios))
    cases.sort(key=lambda c: (c.group, c.point["log_load"]))
    return cases, refused


def main(argv: list[str]) -> None:
    knowledge = load_knowledge()
    model = efficiency_model(knowledge)  # the shipped model (run with an empty GPU_ADVISOR_DATA_DIR)
    if "--serving-only" not in argv:
        cases, refused = training_cases(knowledge, model)
        print(f"training: {len(cases)} published runs predicted as stated ({refused} refused as stated)")
        tau, spread = spreads(cases, "training")
        print(
            f"  empirical-Bayes spreads of log(measured/predicted): between (source, GPU, stack) groups "
            f"{tau:.3f}, within a group {spread:.3f}"
        )
        tau, spread, length, ll = fit_priors(cases, "training", TRAINING_SCALES)
        print(f"  marginal-likelihood priors: TAU {tau}, SPREAD {spread}, length x{length} (log L {ll:.1f})")
        report(
            "  by source",
            *calibrate_groups(cases, "training", TRAINING_SCALES, False),
            "goal <= 8% and <= 0.6x; calibration run within 3%",
        )
        report(
            "  by source x GPU x stack",
            *calibrate_groups(cases, "training", TRAINING_SCALES, True),
            "one user's cluster",
        )
        report(
            "  by source x GPU x stack, on 3 runs",
            *calibrate_groups(cases, "training", TRAINING_SCALES, True, 3),
            "each group calibrated on its first 3 runs",
        )
    if "--training-only" not in argv:
        cases, refused = serving_cases(knowledge, model)
        print(
            f"serving: {len(cases)} published results at a concurrency ({refused} refused or without figures)"
        )
        scales = SERVING_SCALES
        for metric, goal in (("output_tok_s", "goal <= 15%"), ("ttft_ms", "goal <= 25%")):
            sub = [c for c in cases if metric in c.log_ratio]
            if not sub:
                print(f"  {metric}: no published result at a concurrency has it at the median")
                continue
            tau, spread, length, ll = fit_priors(sub, metric, scales)
            print(f"  {metric} marginal-likelihood priors: TAU {tau}, SPREAD {spread}, length x{length}")
            report(f"  {metric}", *calibrate_groups(sub, metric, scales, False), goal)


if __name__ == "__main__":
    main(sys.argv[1:])
