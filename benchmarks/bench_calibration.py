"""Calibration against published runs (prints figures; issue 27's goals), and the re-fit of its priors.

Usage: python benchmarks/bench_calibration.py [--serving-only | --training-only] [--refit]
Run it with an empty GPU_ADVISOR_DATA_DIR (the user's own profiles would calibrate the "before").

--refit fits the priors on the published runs against the base models as they are now and writes
knowledge/calibration_priors.json (read by advisor/learned/calibration/priors.py), then reports with them:
the one step to re-run after the training step model or the serving model changes.

Training: every run of knowledge/llm_benchmarks.csv is predicted as a user states it (model, GPU, count,
precision, sequence, micro-batch and the published layout held; the rest searched) by the shipped,
uncalibrated model; its point carries the composed step's compute and exposed-communication shares. Each
source (or source x GPU x stack) stands for a user: calibrate on its first predictable run, predict its other
runs with exactly the multiplier predict applies (advisor/learned/calibration/multiplier.py), and compare
median errors before and after; a run on another GPU or stack than the calibration run is not calibrated (as
in the product). The priors (prior spreads of the compute, communication and per-step overhead parts, and the
per-configuration spread and length) are those of highest marginal likelihood over the source x GPU x stack
groups.

Serving: each deployment of knowledge/serving_benchmarks.csv measured at several concurrencies (same source,
model, GPU, count, TP, engine, lengths, precision): fit the engine's efficiency multipliers on one result
(advisor/learned/calibration/serving.py, the scheduler simulated exactly at that load, with the defaults of
the engine release the result states, as --stack-version gives it), then simulate the
others at them; output throughput, mean TTFT and mean TPOT (the published figures are means: compared with
the simulated requests' means) before and after. The multipliers' prior spreads are the spread between
deployments of the multipliers fitted on all of each deployment's results.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from advisor.answer.calibration_runs import figures, prediction_shares
from advisor.answer.predict import predict
from advisor.catalog import load_knowledge
from advisor.job.inputs import RunConfig, Workload
from advisor.learned.calibration import priors as priors_module
from advisor.learned.calibration.multiplier import (
    NOISE,
    SERVING_SCALES,
    SHARES,
    TRAINING_SCALES,
    correction,
    distance,
)
from advisor.learned.calibration.points import serving_point, training_point
from advisor.learned.calibration.serving import KNOBS, fit
from advisor.learned.calibration.serving_profile import ServingTrial, serving_base_name
from advisor.learned.efficiency.explicit import workload_of_run
from advisor.learned.efficiency.runs import read_llm_runs
from advisor.learned.efficiency.select import efficiency_model
from advisor.question.errors import AdvisorError

PRIORS = Path(__file__).resolve().parents[1] / "knowledge" / priors_module.FILE
SERVING_METRICS = ("output_tok_s", "mean_ttft_ms", "mean_tpot_ms")


@dataclass(frozen=True, slots=True)
class Case:
    """One published training run with its uncalibrated prediction."""

    group: str
    cluster: str
    point: dict[str, float]
    log_ratio: float


def training_cases(knowledge, model) -> tuple[list[Case], int]:
    runs, _ = read_llm_runs(knowledge)
    cases, refused = [], 0
    for run in runs:
        try:
            pred = predict(knowledge, workload_of_run(run), run.gpu, run.count, None, model)
        except (AdvisorError, ValueError):
            refused += 1
            continue
        if pred.throughput is None or run.throughput <= 0:
            refused += 1
            continue
        point = training_point(
            params=_params(knowledge, run.workload),
            seq_len=run.seq_len or 2048,
            kind=run.kind,
            precision=pred.precision,
            count=run.count,
            layout=pred.layout,
        )
        point.update(prediction_shares(pred))
        ratio = math.log(run.throughput / pred.throughput.value)
        cases.append(Case(run.origin, f"{run.gpu}|{run.stack}", point, ratio))
    return cases, refused


def _params(knowledge, model_id: str) -> float:
    m = knowledge.model(model_id)
    return float(getattr(m, "params", 0) or 1e9)


def _err(log_ratio: float) -> float:
    """|predicted / measured - 1| for a prediction off by log_ratio = log(measured / predicted)."""
    return abs(math.exp(-log_ratio) - 1.0)


def calibrate_groups(cases: list[Case], by_cluster: bool, first: int = 1) -> tuple[list, list, list, int]:
    """(before, after) errors of the other runs, the calibration runs' errors after, and the groups used; each
    group calibrated on its first `first` runs."""
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[f"{c.group}|{c.cluster}" if by_cluster else c.group].append(c)
    before, after, own, used = [], [], [], 0
    for members in groups.values():
        if len(members) <= first:
            continue
        used += 1
        cal, rest = members[:first], members[first:]
        cluster = cal[0].cluster
        pairs = [(c.point, c.log_ratio) for c in cal if c.cluster == cluster]
        own.append(
            _err(cal[0].log_ratio - correction(cal[0].point, pairs, "training", TRAINING_SCALES).log_mean)
        )
        for c in rest:
            before.append(_err(c.log_ratio))
            if c.cluster != cluster:  # another GPU or stack: the product does not calibrate it
                after.append(_err(c.log_ratio))
                continue
            after.append(_err(c.log_ratio - correction(c.point, pairs, "training", TRAINING_SCALES).log_mean))
    return before, after, own, used


def oracle(cases: list[Case], by_cluster: bool) -> float:
    """The median error of the other runs were each group's mean log ratio known (in sample): the floor of
    any calibration with one factor per group."""
    groups: dict[str, list[float]] = defaultdict(list)
    for c in cases:
        groups[f"{c.group}|{c.cluster}" if by_cluster else c.group].append(c.log_ratio)
    errs = [_err(r - statistics.fmean(v)) for v in groups.values() if len(v) > 1 for r in v[1:]]
    return statistics.median(errs)


def fit_training_priors(cases: list[Case]) -> dict[str, float]:
    """The prior spreads of highest marginal likelihood over the source x GPU x stack groups (each a user):
    log ratios ~ N(0, Phi diag(s^2) Phi' + SPREAD^2 exp(-d^2 / 2 L^2) + NOISE^2 I), Phi the runs' compute,
    communication and 1 / step-seconds parts. numpy and scipy, here only."""
    import numpy as np
    from scipy.optimize import minimize

    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[f"{c.group}|{c.cluster}"].append(c)
    data = []
    for members in groups.values():
        d2 = np.array([[distance(a.point, b.point, TRAINING_SCALES) ** 2 for b in members] for a in members])
        phi = np.array(
            [[c.point.get(f, 1.0 if f == "share_compute" else 0.0) for f in SHARES] for c in members]
        )
        data.append((d2, phi, np.array([c.log_ratio for c in members])))

    def nll(z) -> float:
        s, spread, length = np.exp(z[:3]), math.exp(z[3]), math.exp(z[4])
        total = 0.0
        for d2, phi, r in data:
            k = (phi * s**2) @ phi.T + spread**2 * np.exp(-0.5 * d2 / length**2) + NOISE**2 * np.eye(len(r))
            _, logdet = np.linalg.slogdet(k)
            total += 0.5 * (logdet + r @ np.linalg.solve(k, r))
        return total

    start = np.log([0.2, 0.5, 0.05, 0.4, 1.0])
    best = minimize(nll, start, method="Nelder-Mead", options={"maxiter": 4000, "xatol": 1e-4, "fatol": 1e-4})
    s = np.exp(best.x)
    return {
        "compute": round(float(s[0]), 4),
        "comm": round(float(s[1]), 4),
        "overhead_s": round(float(s[2]), 4),
        "spread": round(float(s[3]), 4),
        "length": round(float(s[4]), 4),
        "log_likelihood": round(float(-best.fun), 2),
    }


def report(name: str, before, after, own, used: int, goal: str) -> None:
    b, a = statistics.median(before), statistics.median(after)
    print(
        f"{name}: {used} groups, {len(before)} other runs: median error before {b:.1%}, after {a:.1%} "
        f"({a / b:.2f}x); calibration runs after: median {statistics.median(own):.1%}, max {max(own):.1%}"
        f"  [{goal}]"
    )


@dataclass
class Deployment:
    """One published deployment's results at several concurrencies, each with how to simulate it."""

    key: str
    rows: list[tuple[int, Workload, str, int, dict[str, float]]] = field(default_factory=list)
    """(concurrency, workload, gpu, count, measured), by concurrency."""


def _release(text: str) -> str | None:
    """The engine release a result states ('0.7.3.dev138 (ROCm 6.3)' -> '0.7.3.dev138'), as a user of
    calibrate states it with --stack-version: the deployment is simulated with that release's scheduler."""
    word = (text or "").split(" ")[0]
    return word if re.fullmatch(r"[0-9][0-9A-Za-z.+_-]{0,31}", word) else None


def deployments(knowledge) -> list[Deployment]:
    rows = list(csv.DictReader((knowledge.root / "serving_benchmarks.csv").open(encoding="utf-8")))
    found: dict[str, Deployment] = {}
    for r in rows:
        if r["kind"] != "concurrency" or not r["concurrency"] or not r["output_tok_s"]:
            continue
        conc, count, tp = int(float(r["concurrency"])), int(r["count"]), int(r["tp"] or 1)
        w = Workload(
            model=r["model"],
            kind="inference",
            precision=r["precision"] or "auto",
            prompt_tokens=int(float(r["isl"])),
            output_tokens=int(float(r["osl"])),
            batch_size=max(1, conc // max(1, count // tp)),
            config=RunConfig(engine=r["engine"], tp=tp, pp=int(r["pp"] or 1)),
            stack_version=_release(r["engine_version"]),
        )
        measured = {"output_tok_s": float(r["output_tok_s"])}
        for col, pctl, name in (
            ("ttft_ms", "ttft_pctl", "mean_ttft_ms"),
            ("tpot_ms", "tpot_pctl", "mean_tpot_ms"),
        ):
            if r[col] and r[pctl] == "mean":
                measured[name] = float(r[col])
        key = "|".join(
            r[k] for k in ("source", "model", "gpu", "count", "tp", "engine", "isl", "osl", "precision")
        )
        found.setdefault(key, Deployment(key)).rows.append((conc, w, r["gpu"], count, measured))
    out = []
    for d in found.values():
        d.rows.sort(key=lambda row: row[0])
        if len(d.rows) > 1:
            out.append(d)
    return out


def _simulate(knowledge, base, row, theta) -> dict[str, float]:
    _, w, gpu, count, _ = row
    try:
        pred = predict(knowledge, w, gpu, count, None, ServingTrial(base, theta))
    except (AdvisorError, ValueError):
        return {}
    return figures(pred, "serving") if pred.throughput is not None else {}


def _results(knowledge, base, rows):
    return [((lambda th, row=row: _simulate(knowledge, base, row, th)), row[4]) for row in rows]


def fit_serving_priors(knowledge, base, deps: list[Deployment]) -> dict[str, float]:
    """Each log multiplier's spread between deployments: the root mean square of the multipliers that
    reproduce all of each deployment's results (every figure at its repeatability, each block of the fit
    from its own figures) under a wide prior (at least 0.1)."""
    wide = dict.fromkeys(KNOBS, 3.0)
    fitted = [
        f.mean for d in deps if (f := fit(_results(knowledge, base, d.rows), wide, exact=True)) is not None
    ]
    return {
        k: round(max(0.1, math.sqrt(statistics.fmean(m[i] ** 2 for m in fitted))), 3)
        for i, k in enumerate(KNOBS)
    }


def _serving_point(knowledge, row) -> dict[str, float]:
    conc, w, _, count, _ = row
    point = serving_point(
        params=_params(knowledge, w.model),
        count=count,
        tp=w.config.tp or 1,
        load=conc,
        prompt=w.prompt_tokens,
        output=w.output_tokens,
        precision=w.precision,
    )
    return {**point, "rate": 0.0}


_KNOWLEDGE: list = []


def _residual(row, cal, metric: str, ratio: float | None) -> float:
    """The residual multiplier's log at row given the calibration result's log ratio left (0 without)."""
    if ratio is None:
        return 0.0
    k = _KNOWLEDGE[0]
    name = {"output_tok_s": "throughput", "mean_ttft_ms": "ttft", "mean_tpot_ms": "tpot"}[metric]
    fix = correction(_serving_point(k, row), [(_serving_point(k, cal), ratio)], name, SERVING_SCALES)
    return fix.log_mean if fix is not None else 0.0


def serving_transfer(
    knowledge, base, deps: list[Deployment], which: str
) -> dict[str, dict[str, list[float]]]:
    """Per metric: the other results' errors before and after, and the calibration result's own after, when
    each deployment is calibrated on its lowest (or middle) concurrency."""
    out: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in SERVING_METRICS}
    for d in deps:
        valid = [row for row in d.rows if _simulate(knowledge, base, row, (0.0,) * len(KNOBS))]
        if len(valid) < 2:
            continue
        cal = valid[0] if which == "lowest" else valid[len(valid) // 2]
        found = fit(_results(knowledge, base, [cal]))
        if found is None:
            continue
        fitted = _simulate(knowledge, base, cal, found.mean)
        # What the multipliers leave at the calibration result: the residual multiplier, as the product.
        left = {m: math.log(cal[4][m] / fitted[m]) for m in SERVING_METRICS if m in cal[4] and fitted.get(m)}
        for m, r in left.items():
            out[m]["own"].append(_err(r - _residual(cal, cal, m, r)))
        for row in valid:
            if row is cal:
                continue
            before = _simulate(knowledge, base, row, (0.0,) * len(KNOBS))
            after = _simulate(knowledge, base, row, found.mean)
            for m in SERVING_METRICS:
                if m in row[4] and m in before and m in after:
                    moved = after[m] * math.exp(_residual(row, cal, m, left.get(m)))
                    out[m]["before"].append(abs(before[m] / row[4][m] - 1))
                    out[m]["after"].append(abs(moved / row[4][m] - 1))
    return out


def write_priors(
    training: dict[str, float] | None, serving: dict[str, float] | None, knowledge, model
) -> None:
    """knowledge/calibration_priors.json with what they were fitted on."""
    old = json.loads(PRIORS.read_text(encoding="utf-8")) if PRIORS.is_file() else {}
    data = {k: v for k, v in old.items() if k != "meta"}
    meta = dict(old.get("meta", {}))
    digest = lambda name: hashlib.sha256((knowledge.root / name).read_bytes()).hexdigest()[:16]  # noqa: E731
    if training is not None:
        data["training"] = {k: v for k, v in training.items() if k != "log_likelihood"}
        meta["training"] = {
            "fitted_on": f"knowledge/llm_benchmarks.csv (sha256 {digest('llm_benchmarks.csv')}), each "
            "source x GPU x stack a user, highest marginal likelihood",
            "base_model": model.name,
            "log_likelihood": training["log_likelihood"],
        }
    if serving is not None:
        data["serving_knobs"] = serving
        meta["serving_knobs"] = {
            "fitted_on": f"knowledge/serving_benchmarks.csv (sha256 {digest('serving_benchmarks.csv')}) "
            "concurrency rows, each deployment's multipliers fitted on all its results; their root mean "
            "square",
            "base_model": serving_base_name(),
        }
    meta["written_by"] = "python benchmarks/bench_calibration.py --refit"
    meta["date"] = dt.date.today().isoformat()
    data["meta"] = meta
    PRIORS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    priors_module._shipped.cache_clear()
    print(f"wrote {PRIORS.relative_to(PRIORS.parents[1])}")


def training_section(knowledge, model, refit: bool) -> None:
    cases, refused = training_cases(knowledge, model)
    print(f"training: {len(cases)} published runs predicted as stated ({refused} refused as stated)")
    if refit:
        got = fit_training_priors(cases)
        print(f"  marginal-likelihood priors: {got}")
        write_priors(got, None, knowledge, model)
    print(f"  priors in use: {priors_module.prior('training')}")
    print(
        f"  floor of any one-factor-per-user calibration (each group's mean known, in sample): by source "
        f"{oracle(cases, False):.1%}, by source x GPU x stack {oracle(cases, True):.1%}"
    )
    goal = "goal <= 8% and <= 0.6x; calibration run within 3%"
    report("  by source", *calibrate_groups(cases, False), goal)
    report("  by source x GPU x stack", *calibrate_groups(cases, True), "one user's cluster")
    report("  by source x GPU x stack, on 3 runs", *calibrate_groups(cases, True, 3), "first 3 runs of each")


def serving_section(knowledge, model, refit: bool) -> None:
    _KNOWLEDGE[:] = [knowledge]
    deps = deployments(knowledge)
    results = sum(len(d.rows) for d in deps)
    print(f"serving: {len(deps)} deployments at several concurrencies ({results} results)")
    if refit:
        got = fit_serving_priors(knowledge, model, deps)
        print(f"  efficiency multipliers' spread between deployments: {got}")
        write_priors(None, got, knowledge, model)
    print(f"  priors in use: {priors_module.prior('serving_knobs')}")
    goals = {"output_tok_s": "goal <= 15%", "mean_ttft_ms": "goal <= 25%", "mean_tpot_ms": ""}
    for which in ("lowest", "middle"):
        got = serving_transfer(knowledge, model, deps, which)
        for m in SERVING_METRICS:
            b, a, own = got[m]["before"], got[m]["after"], got[m]["own"]
            if not b:
                continue
            before, after = statistics.median(b), statistics.median(a)
            print(
                f"  calibrated at the {which} concurrency, {m}: {len(b)} other results: median error before "
                f"{before:.1%}, after {after:.1%}; calibration results after: median "
                f"{statistics.median(own):.1%}, max {max(own):.1%}  [{goals[m]}]"
            )


def main(argv: list[str]) -> None:
    knowledge = load_knowledge()
    model = efficiency_model(knowledge)  # the shipped model (run with an empty GPU_ADVISOR_DATA_DIR)
    refit = "--refit" in argv
    if "--serving-only" not in argv:
        training_section(knowledge, model, refit)
    if "--training-only" not in argv:
        serving_section(knowledge, model, refit)


if __name__ == "__main__":
    main(sys.argv[1:])
