"""Print how the tool's as-typed answer compares with its answer for the stated recipe, on the shipped runs.

For every LLM run of knowledge/llm_benchmarks.csv with a stated layout, `predict` twice with the shipped
model: as typed (model, GPU, count, precision, workload and sequence only: the tool chooses the stack,
layout, recomputation and batch) and as stated (every value the source states held). A typed answer slower
than the stated one means the recipe is outside the search, the default stack differs, or the ranking
discards it. Then the as-typed lines of `gpu-advisor model evaluate` (each non-vendor run predicted by the
model refitted without its source), without the rest of that command's refits.

With --runs heldoutN[,heldoutM...] (development sets only), the same split on a set's runs instead: per
source the typed answer's ratio to the measurement cut into the stated answer's own ratio (the physics and the
stack's residual) and the typed / stated ratio (what the defaults chose), with the choices the typed plan made
that the source's run did not (stack, recomputation, layout, micro-batch): what a default can and cannot fix.

Run: .venv/bin/python benchmarks/bench_typed.py [--detail] [--below 0.9] [--no-evaluate]   (about a minute)
     .venv/bin/python benchmarks/bench_typed.py --runs heldout8 [--detail]   (seconds per set)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


PLAN_KEYS = ("stack", "recompute", "layout", "micro_batch")


def plan_of(data: dict) -> dict[str, str]:
    """The choices of one answer (predict's JSON) that a default decides: stack, recomputation (an open one
    named so), model-parallel layout and micro-batch."""
    conf = data.get("configuration", {})

    def value(key: str) -> str:
        part = conf.get(key) or {}
        return str(part.get("value", "?"))

    recompute = value("recompute") + (
        "/open" if "open" in str((conf.get("recompute") or {}).get("note")) else ""
    )
    layout = " ".join(f"{k}{value(k)}" for k in ("tp", "pp", "cp", "ep") if value(k) not in ("1", "?"))
    return {
        "stack": value("stack"),
        "recompute": recompute,
        "layout": layout or "dp",
        "micro_batch": value("micro_batch"),
    }


def choices_differ(stated: dict[str, str], typed: dict[str, str]) -> list[str]:
    """The plan choices (PLAN_KEYS) the typed answer made otherwise than the stated run; an open
    recomputation counts as the policy its plan was searched with (none, the full one priced beside it)."""
    return [k for k in PLAN_KEYS if stated[k].split("/")[0] != typed[k].split("/")[0]]


def _geo(values: Sequence[float]) -> float:
    return math.exp(statistics.median(math.log(v) for v in values)) if values else math.nan


Split = tuple[float, float, float, list[str]]
"""One run answered both ways: stated / measured, typed / stated, typed / measured, the choices differing."""


def _split_line(name: str, got: Sequence[Split], chose: str = "") -> str:
    ratios = " ".join(f"{_geo([g[i] for g in got]):12.2f}" for i in range(3))
    return f"  {name[:34]:34} {len(got):4d} {ratios}  {chose}".rstrip()


def _split_row(bh: Any, row: dict[str, str], detail: bool) -> Split | None:
    """One development row's split, or None where either answer was refused."""
    stated, typed = (bh.run_training(row, mode).answer.data for mode in bh.MODES)
    if stated is None or typed is None:
        return None
    measured = float(row["tokens_per_s_per_gpu"]) * int(row["count"])
    s_tput, t_tput = bh.cli.p50(stated, "throughput"), bh.cli.p50(typed, "throughput")
    s_plan, t_plan = plan_of(stated), plan_of(typed)
    differs = choices_differ(s_plan, t_plan)
    got = (s_tput / measured, t_tput / s_tput, t_tput / measured, differs)
    if detail:
        ratios = " ".join(f"{x:5.2f}" for x in got[:3])
        print(f"  {row['id'][:44]:44} {ratios}  stated {s_plan}  typed {t_plan}")
    return got


def dev_split(runs: str, detail: bool) -> None:
    """Per source of a development set: typed / measured = stated / measured x typed / stated (medians), and
    how often the typed plan chose otherwise than the run (rows answered both ways)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_heldout as bh

    if detail:
        print(f"{runs}, each row: stated/measured typed/stated typed/measured, and both plans")
    by_source: dict[str, list[Split]] = {}
    for row in bh.read_rows(bh.run_files(runs)[0]):
        got = _split_row(bh, row, detail)
        if got is not None:
            by_source.setdefault(row["source_id"], []).append(got)
    print(f"{runs}: typed / measured = stated / measured x typed / stated (medians; rows answered both ways)")
    print(f"  {'source':34} rows  stated/meas typed/stated   typed/meas  typed plan chose otherwise (rows)")
    every: list[Split] = []
    for source, got in sorted(by_source.items()):
        every += got
        counts = Counter(k for *_, differs in got for k in differs)
        print(_split_line(source, got, ", ".join(f"{k} {counts[k]}" for k in PLAN_KEYS if counts[k]) or "-"))
    print(_split_line("ALL", every))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="list each run under --below with both plans")
    parser.add_argument("--below", type=float, default=0.9, help="typed/stated ratio listed (default 0.9)")
    parser.add_argument("--no-evaluate", action="store_true", help="skip the held-out as-typed lines")
    parser.add_argument(
        "--runs", help="development sets, comma-separated (heldout, heldout2 ..): split per source"
    )
    args = parser.parse_args(argv)
    if args.runs:
        for runs in args.runs.split(","):
            dev_split(runs.strip(), args.detail)
        return 0
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
