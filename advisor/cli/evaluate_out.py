"""Provides `gpu-advisor model train|evaluate` printing: one table of held-out figures, baselines and
goals."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

from advisor.cli.output import json_text
from advisor.learned.efficiency.evaluate import Scores

# The goals of issue 26 for LLM rows: source-balanced and family-held-out median error at most 12% and at
# most 0.6x the constant MFU's, P10-P90 coverage 75-90% on every family of sources, and the measured order
# of layouts within each source that varies only the layout (Kendall's tau at least 0.6).
GOAL_MEDIAN = 0.12
GOAL_GAIN = 1 / 0.6
GOAL_COVERAGE = (0.75, 0.90)
GOAL_TAU = 0.6


def extra_sections() -> list[str]:
    """Further sections of `model evaluate`: the memory model's validation against measured peaks."""
    from advisor.learned.memory.validation import memory_validation_lines

    return ["\n".join(memory_validation_lines())]


def _pct(v: float | None, digits: int = 1) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}%}"


def scores_table(scores: Sequence[Scores]) -> str:
    """Every held-out score with both baselines, one line per scheme and subset."""
    from advisor.cli.output import table

    rows = []
    for s in scores:
        rows.append(
            [
                s.family,
                s.scheme,
                "all rows" if s.subset == "all" else f"  {s.subset}",
                s.rows,
                _pct(s.median_ape),
                _pct(s.typical_median_ape),
                _pct(s.p90_ape),
                _pct(s.within_2x, 0),
                _pct(s.coverage_p10_p90, 0),
                _pct(s.const_median_ape),
                _pct(s.phys_median_ape),
                _pct(s.prev_median_ape),
                f"{s.gain:.2f}x",
            ]
        )
    return table(
        [
            "rows",
            "held out",
            "subset",
            "n",
            "median err",
            "typical P50",
            "P90 err",
            "in 2x",
            "P10-P90 cover",
            "const-MFU med",
            "composed med",
            "previous med",
            "gain",
        ],
        rows,
        right=range(3, 13),
    )


def _mark(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _balanced(lines: Sequence[Scores]) -> tuple[float, float, float]:
    """Mean of the per-source medians: model, constant MFU, physical."""
    n = len(lines)
    return (
        sum(s.median_ape for s in lines) / n,
        sum(s.const_median_ape for s in lines) / n,
        sum(s.phys_median_ape for s in lines) / n,
    )


def _median_goal(what: str, model: float, const: float, phys: float) -> str:
    ratio = model / const if const else math.inf
    return (
        f"goal: {what} median error <= {GOAL_MEDIAN:.0%}: {_pct(model)} ({_mark(model <= GOAL_MEDIAN)}); "
        f"best constant MFU {_pct(const)}, {ratio:.2f}x of it (goal <= {1 / GOAL_GAIN:.1f}x: "
        f"{_mark(ratio <= 1 / GOAL_GAIN)}); composed step x a constant {_pct(phys)}"
    )


def layout_rank_lines(ranks: Sequence[Any]) -> list[str]:
    """Kendall's tau of the layout order within each source that varies only the layout: the model, the
    composed step and the previous estimator (the speed of light), and the goal."""
    if not ranks:
        return ["layout ranking: no source in the data varies only the layout"]
    lines = ["layout ranking (Kendall's tau, predicted vs measured per-GPU throughput, held out by source):"]
    lines += [
        f"  {r.group} ({r.rows} runs): model {r.model:+.2f}, composed {r.composed:+.2f}, "
        f"previous {r.previous:+.2f}"
        for r in ranks
    ]
    mean = sum(r.model for r in ranks) / len(ranks)
    prev = sum(r.previous for r in ranks) / len(ranks)
    lines.append(
        f"goal: mean tau >= {GOAL_TAU:g} over {len(ranks)} groups: {mean:+.2f} ({_mark(mean >= GOAL_TAU)}); "
        f"previous estimator {prev:+.2f}"
    )
    return lines


def goals(scores: Sequence[Scores]) -> list[str]:
    """The LLM figures against issue 16's goals, each met or not, with the figure."""
    loso = [s for s in scores if s.family == "llm" and s.scheme == "source"]
    if not loso:
        return ["no held-out-source LLM figures"]
    sources = [s for s in loso[1:] if not s.subset.startswith("family: ")]
    families = [s for s in loso[1:] if s.subset.startswith("family: ")]
    lines = [_median_goal(f"source-balanced ({len(sources)} sources held out in turn)", *_balanced(sources))]
    lines += [
        _median_goal(
            f"family held out ({s.subset}; {s.rows} runs)",
            s.median_ape,
            s.const_median_ape,
            s.phys_median_ape,
        )
        for s in scores
        if s.family == "llm" and s.scheme == "family"
    ]
    lo, hi = GOAL_COVERAGE
    cover = ", ".join(
        f"{s.subset.removeprefix('family: ')} {_pct(s.coverage_p10_p90, 0)} of {s.rows}" for s in families
    )
    ok = all(s.coverage_p10_p90 is not None and lo <= s.coverage_p10_p90 <= hi for s in families)
    lines.append(f"goal: P10-P90 coverage {lo:.0%}-{hi:.0%} on every family: {cover} ({_mark(ok)})")
    pooled = loso[0]
    lines.append(
        f"row-pooled (every run counts once; MosaicML's {max((s.rows for s in sources), default=0)} runs "
        f"dominate it): {_pct(pooled.median_ape)} against the constant MFU's {_pct(pooled.const_median_ape)}"
    )
    return lines


NOTES = [
    "LLM rows of LLM stacks: the shipped estimator, chosen by leave-one-source-out inside each fold's "
    "training rows (nested, never on the held-out rows; the simplest within one standard error of the "
    "per-source difference to the best) among the physical estimators (the speed of light of the stated "
    "layout x one constant: the median, the median with each stack's residual partially pooled by its "
    "sources, or a source-balanced Huber fit, per family of source or not) and the Huber ridge on physical "
    "inputs at each "
    "penalty up to the intercept-only limit; bounded as it ships (the highest efficiency measured on the GPU "
    "generation and precision, the constant-MFU prior outside the measured range, both from the training "
    "rows); other rows: gradient-boosted trees",
    "held out by source: every row of one repository (all its commits) predicted by a model fitted "
    "without it; by family: fitted on vendor tables only and scored on papers, reports and independent "
    "runs, and the reverse; by GPU: every row of one GPU type",
    "median err: each run at its own family (a vendor table's run against the model's vendor figure); "
    "typical P50: the figure a user is shown (the non-vendor family), before the bounds",
    "const-MFU: throughput = c x peak x GPUs / training FLOPs per item, c the median MFU of the training "
    "folds' rows of the same family and precision class (fp8, 16-bit, 32-bit); composed: the step of the "
    "stated layout composed from measured operations (knowledge/operations/; docs/step-model.md) x one "
    "median residual of the training folds; previous: the release before it, the speed of light of the "
    "stated layout (roofline, bubble, alpha-beta communication) x one median efficiency of the training "
    "folds",
    "error = |predicted - measured| / measured throughput; in 2x = predicted within 0.5x-2x of measured; "
    "gain = const-MFU median / model median",
    "P10-P90 cover: the interval a user is shown (around the typical P50), from the other sources' "
    "held-out residuals, every family of source weighing the same, at the narrowest lower and upper "
    "quantiles and the widening by what the composed step does not know of a plan (an eager stack; the "
    "servers it spans) and by how far it lies from the measured runs (a stack under two sources, an "
    "unmeasured GPU, fine-tuning, MoE, a sequence past the attention table) under which each family's "
    "mean coverage over its sources, each held out in turn and weighing the same, lies within 80-90%, "
    "else the choice nearest that band; the development sets are scored under it, never used to choose it",
]


MLPERF_RATIO = 1.28  # 8x H200 / 8x H100, Llama-2-70B fp8 offline, as issue 17 quotes the measurement


def ratio_line() -> str:
    """The Done-when check of issue 17: 8x H200 over 8x H100 for Llama-2-70B fp8 (700 in, 294 out)."""
    from advisor.answer.predict import predict
    from advisor.catalog import load_knowledge
    from advisor.job.inputs import Workload

    knowledge = load_knowledge()
    w = Workload(model="llama-2-70b", kind="inference", precision="fp8", prompt_tokens=700, output_tokens=294)
    tput = {}
    for gpu in ("h200", "h100-sxm"):
        p = predict(knowledge, w, gpu, 8)
        tput[gpu] = p.throughput.value if p.throughput else float("nan")
    ratio = tput["h200"] / tput["h100-sxm"]
    off = abs(ratio / MLPERF_RATIO - 1)
    return (
        f"8x H200 / 8x H100, Llama-2-70B fp8 offline (predict, 700 in / 294 out): {tput['h200']:,.0f} / "
        f"{tput['h100-sxm']:,.0f} output tokens/s = {ratio:.2f} against the measured {MLPERF_RATIO} "
        f"({off:.0%} off; goal within 10%: {'met' if off <= 0.10 else 'not met'})"
    )


def _serving_section() -> list[str]:
    from advisor.learned.serving.evaluate import evaluation_report

    print("refitting the serving model per held-out engine and GPU (a few minutes) ...", file=sys.stderr)
    return ["", "serving (learned from measured runs):", evaluation_report(), ratio_line()]


def model_evaluate(args: argparse.Namespace) -> int:
    """`gpu-advisor model evaluate`: refit per fold and print every figure in one table."""
    from advisor.answer.predict import predict
    from advisor.catalog import load_knowledge
    from advisor.job.inputs import Workload
    from advisor.learned.efficiency.as_typed import as_typed_lines
    from advisor.learned.efficiency.base import EfficiencyModel
    from advisor.learned.efficiency.dataset import shipped_dataset
    from advisor.learned.efficiency.train import evaluation

    knowledge = load_knowledge()
    print("refitting per held-out source, family and GPU (a few minutes) ...", file=sys.stderr)
    scores, notes, ranks = evaluation(knowledge)

    def throughput_of(workload: Workload, gpu: str, count: int, model: EfficiencyModel) -> float | None:
        figure = predict(knowledge, workload, gpu, count, efficiency=model).throughput
        return None if figure is None else figure.value

    typed = as_typed_lines(knowledge, shipped_dataset(knowledge).samples, throughput_of)
    rank_lines = layout_rank_lines(ranks)
    if (args.format or "table") == "json":
        rows = [{k: _nan_none(v) for k, v in asdict(s).items()} for s in scores]
        out = {
            "scores": rows,
            "goals": goals(scores) + rank_lines[-1:],
            "layout_ranks": [asdict(r) for r in ranks],
            "as_typed": typed[2:],
            "notes": notes + NOTES,
        }
        print(json_text(out, indent=2))
        return 0
    print(
        "training throughput (LLMs: measured / step composed from measured operations; others: / speed of "
        "light):"
    )
    print(scores_table(scores))
    print("\n".join(goals(scores) + rank_lines + typed + ["", *notes, *NOTES]))
    for section in _serving_section() + extra_sections():
        print(section)
    return 0


def _nan_none(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def model_train(args: argparse.Namespace) -> int:
    """`gpu-advisor model train`: refit, cross-validate, write the artifact and its metadata."""
    from advisor.catalog import load_knowledge
    from advisor.learned.efficiency.train import META, SEED, train, write_artifact

    knowledge = load_knowledge()
    folder = Path(args.out_dir) if args.out_dir else Path(str(resources.files("knowledge")))
    print(
        f"training on {knowledge.root} benchmarks.csv and llm_benchmarks.csv (seed {SEED}); cross-validating "
        f"...",
        file=sys.stderr,
    )
    model, meta, scores = train(knowledge)
    path = write_artifact(model, meta, scores, folder)
    print(scores_table(scores))
    print("\n".join(goals(scores)))
    print(f"wrote {path} and {folder / META} ({model.rows} rows, {len(model.trees)} trees)")
    return 0
