"""Print how the tool's as-typed answer compares with its answer for the stated recipe, on the shipped runs.

For every LLM run of knowledge/llm_benchmarks.csv with a stated layout, `predict` twice with the shipped
model: as typed (model, GPU, count, precision, workload and sequence only: the tool chooses the stack,
layout, recomputation and batch) and as stated (every value the source states held). A typed answer slower
than the stated one means the recipe is outside the search, the default stack differs, or the ranking
discards it. Then the as-typed lines of `gpu-advisor model evaluate` (each non-vendor run predicted by the
model refitted without its source), without the rest of that command's refits.

Run: .venv/bin/python benchmarks/bench_typed.py [--detail] [--below 0.9] [--no-evaluate]   (about a minute)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Sequence

from advisor.answer.predict import Prediction, predict
from advisor.catalog import load_knowledge
from advisor.catalog.loader import Knowledge
from advisor.job.door import question
from advisor.job.inputs import Workload
from advisor.learned.efficiency.base import EfficiencyModel
from advisor.learned.efficiency.explicit import workload_of_run
from advisor.learned.efficiency.learned import load_learned
from advisor.learned.efficiency.prior import PriorEfficiency
from advisor.learned.efficiency.runs import Run, read_llm_runs
from advisor.question.errors import AdvisorError


def typed_workload(run: Run) -> Workload:
    """The run as a user types it (the as-typed evaluation's workload)."""
    return question(
        Workload,
        dict(model=run.workload, kind=run.kind, precision=run.precision, seq_len=run.seq_len or None),
    )


def _answer(knowledge: Knowledge, workload: Workload, run: Run, model: EfficiencyModel) -> Prediction | None:
    try:
        got = predict(knowledge, workload, run.gpu, run.count, efficiency=model)
    except AdvisorError:
        return None
    return got if got.throughput is not None else None


def plan_label(p: Prediction) -> str:
    """The chosen plan in one line: layout, sharding, recomputation, batch and stack."""
    lay, stack = p.layout, p.configuration.get("stack")
    name = stack.value if stack else "?"
    return (
        f"TP{lay.tp} PP{lay.pp} CP{lay.cp} EP{lay.ep} DP{lay.dp} v{lay.virtual} {lay.sharding} "
        f"recompute {lay.recompute} mb {lay.micro_batch} x{lay.grad_accum} stack {name}"
    )


def compare(
    knowledge: Knowledge, model: EfficiencyModel, runs: Sequence[Run], below: float, detail: bool
) -> None:
    """Typed / stated per run: per family the median ratio and the count under `below`, and those runs."""
    ratios: dict[str, list[float]] = {}
    for run in runs:
        stated = _answer(knowledge, workload_of_run(run), run, model)
        typed = _answer(knowledge, typed_workload(run), run, model)
        if stated is None or typed is None or stated.throughput is None or typed.throughput is None:
            continue
        ratio = typed.throughput.value / stated.throughput.value
        ratios.setdefault(run.source_family, []).append(ratio)
        if detail and ratio < below:
            per_gpu = run.throughput / run.count
            s_gpu, t_gpu = stated.throughput.value / run.count, typed.throughput.value / run.count
            print(
                f"{ratio:5.2f}  {run.origin} {run.row_ref}: {run.workload} on {run.gpu} x{run.count} "
                f"{run.precision} seq {run.seq_len}, measured {per_gpu:,.0f} tokens/s/GPU; "
                f"stated {s_gpu:,.0f}, typed {t_gpu:,.0f}"
            )
            print(f"       stated: {plan_label(stated)}\n       typed:  {plan_label(typed)}")
    print(f"typed / stated answer of the same tool (shipped model), runs under {below}x:")
    for family, got in sorted(ratios.items()):
        median = math.exp(statistics.median(math.log(r) for r in got))
        under = sum(r < below for r in got)
        print(f"  {family:<12} {len(got):3d} runs: median {median:.2f}x, {under} under {below}x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="list each run under --below with both plans")
    parser.add_argument("--below", type=float, default=0.9, help="typed/stated ratio listed (default 0.9)")
    parser.add_argument("--no-evaluate", action="store_true", help="skip the held-out as-typed lines")
    args = parser.parse_args(argv)
    knowledge = load_knowledge()
    model = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    if model is None:
        print("bench_typed: the shipped efficiency model does not load", file=sys.stderr)
        return 1
    runs = [r for r in read_llm_runs(knowledge)[0] if r.unit == "tokens/s"]
    compare(knowledge, model, runs, args.below, args.detail)
    if not args.no_evaluate:
        from advisor.learned.efficiency.as_typed import as_typed_lines
        from advisor.learned.efficiency.dataset import shipped_dataset

        def throughput_of(workload: Workload, gpu: str, count: int, held: EfficiencyModel) -> float | None:
            figure = predict(knowledge, workload, gpu, count, efficiency=held).throughput
            return None if figure is None else figure.value

        print("\n".join(as_typed_lines(knowledge, shipped_dataset(knowledge).samples, throughput_of)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
