"""Why the composed step's ratio to measurement varies within one source (issue 27's floor; issue 26).

Usage: python benchmarks/bench_within.py [--by source|cluster|both] [--rows] [--stated-kernel]
       python benchmarks/bench_within.py --detail-file FILE --runs heldout|heldout2|heldout3
       python benchmarks/bench_within.py --terms

For every LLM run of an LLM stack the efficiency model is trained on (knowledge/llm_benchmarks.csv and
benchmarks.csv; learned/efficiency/dataset.py), r = log(measured / composed step) before the learned residual
and log(measured / the shipped model's P50) after it. r is demeaned within each source (and within source x
GPU x stack): what is left is what one factor per user cannot fix. Each candidate feature is demeaned the same
way and ranked by the share of that within-group variance it explains alone (a one-feature least-squares fit,
every row weighted 1/its group's runs so that MosaicML's 216 runs do not speak for everyone; R2 pooled over
groups with the feature varying). The slope says which way: a positive slope means the step under-predicts
(measured above the composed step) where the feature is larger.

The median error of the other runs were each group's mean log ratio known (in sample) is printed too: the
floor bench_calibration.py reports (17.1% by source, 13.1% by source x GPU x stack before this work).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.catalog import load_knowledge
from advisor.learned.efficiency.dataset import shipped_runs
from advisor.learned.efficiency.learned import ARTIFACT
from advisor.learned.efficiency.linear import TYPICAL, llm_inputs
from advisor.learned.efficiency.samples import sample_of

try:
    from advisor.learned.efficiency.samples import step_of_run
except ImportError:  # a tree before withinsrc (main at 8d20079): the same step as its samples price it
    step_of_run = None
from advisor.physics import step_ops


@dataclass(frozen=True, slots=True)
class Row:
    """One run: its groups, its log ratios and its candidate features."""

    source: str
    cluster: str
    before: float
    after: float
    features: dict[str, float]
    label: str


def _shares(ops: step_ops.StepOps) -> dict[str, float]:
    total = ops.total_s or 1.0
    out = {op: ops.seconds(op) / total for op in step_ops.ORDER}
    out["exposed comm"] = ops.exposed_comm_s / total
    return out


def _features(run, job, layout, step, peak: float) -> dict[str, float]:
    arch = job.arch
    ops = step.ops
    shares = _shares(ops)
    tokens = max(1, job.seq_len // layout.cp) * layout.micro_batch
    flops_s = job.train_flops_per_item * step.items / layout.count / peak
    return {
        "log params": math.log(job.params),
        "log hidden": math.log(arch.hidden),
        "layers": float(arch.layers),
        "log seq_len": math.log(max(job.seq_len, 1)),
        "log micro-batch": math.log(layout.micro_batch),
        "log tokens per micro-batch (GEMM M)": math.log(tokens),
        "fp8": 1.0 if layout.precision == "fp8" else 0.0,
        "recompute full": 1.0 if layout.recompute == "full" else 0.0,
        "recompute selective": 1.0 if layout.recompute == "selective" else 0.0,
        "moe": 1.0 if arch.is_moe else 0.0,
        # Megatron-Bridge's MoE rows name token-drop recipes; the others route dropless.
        "moe dropless": 1.0 if arch.is_moe and "tokendrop" not in run.row_ref else 0.0,
        "log tp": math.log(layout.tp),
        "log pp": math.log(layout.pp),
        "log cp": math.log(layout.cp),
        "log ep": math.log(layout.ep),
        "virtual stages": float(layout.virtual),
        "log count": math.log(layout.count),
        "log nodes": math.log(layout.nodes),
        "log grad accum": math.log(layout.grad_accum),
        "zero stage": float(
            {"none": 0, "ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}.get(layout.sharding, 0)
        ),
        "share GEMM": shares[step_ops.GEMM],
        "share attention": shares[step_ops.ATTN],
        "share memory-bound": shares[step_ops.MEM],
        "share LM head + loss": shares[step_ops.HEAD],
        "share optimizer": shares[step_ops.OPT] + shares[step_ops.OFFLOAD],
        "share TP/SP": shares[step_ops.TP],
        "share DP exposed": shares[step_ops.DPR],
        "share bubble": shares[step_ops.BUBBLE],
        "share exposed comm": shares["exposed comm"],
        "log composed/peak time (rate)": math.log(step.total_s / max(flops_s, 1e-12)),
        "log vocab/hidden": math.log(arch.vocab / arch.hidden),
    }


@dataclass(frozen=True, slots=True)
class _Got:
    job: object
    layout: object
    step: object


def _step_before(knowledge, run):
    from advisor.catalog.stacks import stack_of
    from advisor.job.defaults import measured_batch
    from advisor.learned.efficiency.explicit import job_of_run, stated_layout
    from advisor.learned.efficiency.samples import knowledge_fabric
    from advisor.physics.memory import TrainingMemoryModel
    from advisor.physics.speed import NON_LLM_STACKS, training_step

    job = job_of_run(knowledge, run)
    gpu = knowledge.gpu(run.gpu)
    mb = run.micro_batch or measured_batch(knowledge, job, gpu, run.precision) or 1
    layout = stated_layout(job, run.count, run.nodes, run.precision, max(mb, 1), run.grad_accum)
    fabric = knowledge.assumptions.fabric.get(run.fabric) or knowledge_fabric(knowledge, job, gpu)
    memory = TrainingMemoryModel(job, gpu, run.precision, knowledge.assumptions)
    per_seq = memory.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
    traits = stack_of(knowledge, run.stack).traits(run.month)
    llm = run.stack not in NON_LLM_STACKS
    step = training_step(job, gpu, layout, fabric, knowledge.assumptions, per_seq, traits, llm)
    return None if step is None else _Got(job, layout, step)


def collect(knowledge, stated_kernel: bool = False) -> list[Row]:
    """Every LLM run of an LLM stack the model is trained on, with its ratios and features (`stated_kernel`:
    its step priced at the attention kernel its software states; the learned P50 stays the model's)."""
    from advisor.learned.efficiency.gbdt import ExportedModel

    model = ExportedModel.from_json(knowledge.root.joinpath(ARTIFACT).read_text(encoding="utf-8"))
    runs, _ = shipped_runs(knowledge)
    rows = []
    for run in runs:
        try:
            sample = sample_of(knowledge, run)
        except Exception:  # noqa: BLE001 (the dataset skips the same runs)
            continue
        if sample is None or sample.family != "llm" or not sample.composed:
            continue
        if step_of_run is None:
            got = _step_before(knowledge, run)
        else:
            got = step_of_run(knowledge, run, stated_kernel)
        if got is None or got.step.ops is None:
            continue
        job, layout, step = got.job, got.layout, got.step
        # measured / the step (the sample's own when the kernel is the stack's usual one).
        before = math.log(run.throughput * step.total_s / step.items)
        log50 = model.linear.predict_log(
            llm_inputs(sample.features, math.log(sample.sol / sample.mfu_sol), TYPICAL)
        )
        feats = _features(run, job, layout, step, sample.mfu_sol * job.train_flops_per_item / run.count)
        cluster = f"{run.origin} | {run.gpu} | {run.stack}"
        label = f"{run.row_ref or run.workload} ({run.gpu} x{run.count} {run.precision})"
        rows.append(Row(run.origin, cluster, before, before - log50, feats, label))
    return rows


def _demean(rows: Sequence[Row], group: Callable[[Row], str], value: Callable[[Row], float]) -> list[float]:
    sums: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        sums[group(r)].append(value(r))
    means = {g: statistics.fmean(v) for g, v in sums.items()}
    return [value(r) - means[group(r)] for r in rows]


def _weights(rows: Sequence[Row], group: Callable[[Row], str]) -> list[float]:
    n: dict[str, int] = defaultdict(int)
    for r in rows:
        n[group(r)] += 1
    return [1.0 / n[group(r)] for r in rows]


def explained(
    rows: Sequence[Row], group: Callable[[Row], str], target: Callable[[Row], float], feature: str
) -> tuple[float, float, int]:
    """(within-group R2 of the feature alone, its slope, the groups it varies in)."""
    y = _demean(rows, group, target)
    x = _demean(rows, group, lambda r: r.features[feature])
    w = _weights(rows, group)
    varies = {group(r) for r, xi in zip(rows, x, strict=True) if abs(xi) > 1e-9}
    sxx = sum(wi * xi * xi for wi, xi in zip(w, x, strict=True))
    syy = sum(wi * yi * yi for wi, yi in zip(w, y, strict=True))
    if sxx <= 1e-12 or syy <= 1e-12:
        return 0.0, 0.0, len(varies)
    sxy = sum(wi * xi * yi for wi, xi, yi in zip(w, x, y, strict=True))
    return sxy * sxy / (sxx * syy), sxy / sxx, len(varies)


def floor(
    rows: Sequence[Row], group: Callable[[Row], str], target: Callable[[Row], float]
) -> tuple[float, float]:
    """(median error of each group's runs were its mean log ratio known, the within-group SD of r)."""
    y = _demean(rows, group, target)
    w = _weights(rows, group)
    sd = math.sqrt(sum(wi * yi * yi for wi, yi in zip(w, y, strict=True)) / sum(w))
    multi = [
        abs(math.exp(yi) - 1)
        for r, yi in zip(rows, y, strict=True)
        if sum(1 for o in rows if group(o) == group(r)) > 1
    ]
    return statistics.median(multi), sd


def report(rows: Sequence[Row], name: str, group: Callable[[Row], str]) -> None:
    groups = {group(r) for r in rows}
    for which, target in (("before the residual", lambda r: r.before), ("after", lambda r: r.after)):
        med, sd = floor(rows, group, target)
        print(
            f"by {name} ({len(groups)} groups, {len(rows)} runs), {which}: median error with the group's "
            f"mean known {med:.1%}, within-group SD of log ratio {sd:.3f}"
        )
    print(f"  {'feature':<40} {'R2 within':>9} {'slope':>8} {'groups':>6}")
    ranked = []
    for f in rows[0].features:
        r2, slope, n = explained(rows, group, lambda r: r.before, f)
        ranked.append((r2, f, slope, n))
    for r2, f, slope, n in sorted(ranked, reverse=True):
        print(f"  {f:<40} {r2:>9.1%} {slope:>+8.3f} {n:>6}")


_DETAIL = re.compile(r"\s+(\S+)\s+stated\s+measured\s+([\d.]+)\s+tool\s+([\d.]+)")


def heldout_within(detail: str, runs: str) -> None:
    """The same within-source figures on a development held-out set, from a saved `bench_heldout.py --runs
    RUNS --only training --detail` output (each run as published: log(measured / the tool's P50))."""
    path = Path(__file__).with_name(f"{runs}_training_runs.csv")
    with path.open(newline="", encoding="utf-8") as f:
        source = {r["id"]: r["source_id"] for r in csv.DictReader(f)}
    by: dict[str, list[float]] = defaultdict(list)
    for line in Path(detail).read_text(encoding="utf-8").splitlines():
        if (m := _DETAIL.match(line)) and m.group(1) in source:
            by[source[m.group(1)]].append(math.log(float(m.group(2)) / float(m.group(3))))
    groups = [v for v in by.values() if len(v) > 1]
    devs = [r - statistics.fmean(v) for v in groups for r in v]
    sd = math.sqrt(sum((r - statistics.fmean(v)) ** 2 / len(v) for v in groups for r in v) / len(groups))
    print(
        f"{runs}: {sum(map(len, by.values()))} runs as published, {len(groups)} sources of 2+: median error "
        f"with the source's mean known {statistics.median(abs(math.exp(d) - 1) for d in devs):.1%}, "
        f"source-balanced within-source SD of log ratio {sd:.3f}"
    )


# The plan's traits a learned residual term could read (linear.INPUTS), each tried alone (a Huber fit with
# that input free, the others held at 0) at a light and a firm penalty.
TERMS = ("log_items_per_gpu_step", "comm_share", "log_count", "log_sol_over_mfu", "log_pp", "log_tp")


def residual_terms() -> None:
    """Does a learned term on the plan's traits cut the within-source spread? Each candidate is fitted with
    every source held out in turn (learned/efficiency/llm_eval.held_out); per held-out source: the median
    error of its runs (held out), and the same with that source's own mean log residual removed (what one
    run of calibration per source could know: the within-source spread); both source-balanced."""
    from advisor.learned.efficiency.dataset import shipped_dataset
    from advisor.learned.efficiency.evaluate import target
    from advisor.learned.efficiency.linear_fit import CANDIDATES, Candidate
    from advisor.learned.efficiency.llm_eval import by_source, held_out

    samples = shipped_dataset(load_knowledge()).samples
    rows = [i for i, s in enumerate(samples) if s.family == "llm"]
    shipped = [c for c in CANDIDATES if c.median and c.pool in (0.0, 2.0) and not c.free]
    ridges = [c for c in CANDIDATES if c.free is None and c.lam in (1.0, 10.0)]  # every trait at once
    tried = [*shipped, *(Candidate(lam, (t,)) for t in TERMS for lam in (0.01, 1.0)), *ridges]
    print(f"{'candidate (held out by source)':<78} {'error':>7} {'within':>7}")
    for cand in tried:
        ho = held_out(samples, rows, by_source, cand)
        by: dict[str, list[float]] = defaultdict(list)
        for i in rows:
            by[samples[i].row.origin].append(target(samples[i]) - ho.own[i])
        error = statistics.fmean(statistics.median(abs(math.exp(r) - 1) for r in v) for v in by.values())
        within = statistics.fmean(
            statistics.median(abs(math.exp(r - statistics.fmean(v)) - 1) for r in v) for v in by.values()
        )
        name = cand.name.replace("physical: speed of light x ", "").replace("source-balanced ", "")
        name = f"{name}, lambda {cand.lam:g}" if cand.free and not cand.median else name
        print(f"{name[:78]:<78} {error:>7.1%} {within:>7.1%}")


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by", choices=("source", "cluster", "both"), default="both")
    parser.add_argument("--rows", action="store_true", help="print every run's ratio, demeaned by source")
    parser.add_argument(
        "--stated-kernel",
        action="store_true",
        help="price each run at the attention kernel its software states (learned/efficiency/runs.py)",
    )
    parser.add_argument("--detail-file", help="a saved bench_heldout.py --detail output (with --runs)")
    parser.add_argument("--runs", default="heldout", help="the held-out set the detail file scored")
    parser.add_argument(
        "--terms",
        action="store_true",
        help="held out by source: does a residual term on a trait cut the spread",
    )
    args = parser.parse_args(argv)
    if args.terms:
        residual_terms()
        return
    if args.detail_file:
        heldout_within(args.detail_file, args.runs)
        return
    knowledge = load_knowledge()
    rows = collect(knowledge, args.stated_kernel)
    if args.by in ("source", "both"):
        report(rows, "source", lambda r: r.source)
    if args.by in ("cluster", "both"):
        report(rows, "source x GPU x stack", lambda r: r.cluster)
    if args.rows:
        y = _demean(rows, lambda r: r.source, lambda r: r.before)
        for r, yi in sorted(zip(rows, y, strict=True), key=lambda t: (t[0].source, t[1])):
            print(f"{yi:+.3f} {r.before:+.3f} {r.source[:30]:<30} {r.label}")


if __name__ == "__main__":
    main(sys.argv[1:])
