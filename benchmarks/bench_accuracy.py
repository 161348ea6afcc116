"""Prints the efficiency model's accuracy on measured runs from public sources never used for training
(benchmarks/external_validation.csv), scored by source, against the constant-MFU and physical baselines.

Held out here (132 rows): NVIDIA DeepLearningExamples (BERT, GNMT, NCF, ResNet-50, ... at several commits),
NVIDIA/NeMo-Framework-Launcher (GPT-3 175B) and huggingface/pytorch-image-models. The NeMo 24.07 and
Megatron-Bridge rows that were here now train (knowledge/llm_benchmarks.csv, the same tables), so they left.
With --cv it first prints the cross-validation (`gpu-advisor model evaluate`'s training table).
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

from advisor.catalog import load_knowledge
from advisor.catalog.benchmarks import parse_benchmarks
from advisor.learned.efficiency.bounds_fit import sample_efficiency
from advisor.learned.efficiency.dataset import build_dataset, shipped_dataset
from advisor.learned.efficiency.evaluate import PRECISION_CLASS, percentile
from advisor.learned.efficiency.learned import load_learned
from advisor.learned.efficiency.prior import PriorEfficiency
from advisor.learned.efficiency.runs import run_of_row

EXTERNAL = Path(__file__).with_name("external_validation.csv")


def _line(name: str, errors: list[float]) -> str:
    return (
        f"  {name:<44} {len(errors):4d} runs  median {statistics.median(errors):6.1%}  "
        f"P90 {percentile(errors, 90):6.1%}"
    )


def external() -> None:
    knowledge = load_knowledge()
    rows = parse_benchmarks(EXTERNAL.read_text(encoding="utf-8"), EXTERNAL.name)
    data = build_dataset(
        knowledge,
        [
            run_of_row(
                r,
                "ngc-pytorch"
                if r.source.startswith("NVIDIA/Deep")
                else "megatron"
                if "NeMo" in r.source
                else "pytorch",
            )
            for r in rows
        ],
    )
    learned = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    if learned is None:
        raise SystemExit("no efficiency model artifact: run `make train`")
    train = shipped_dataset(knowledge).samples
    k = {
        f: statistics.median(math.log(s.efficiency) for s in train if s.family == f) for f in ("llm", "other")
    }
    mfu: dict[tuple[str, str], float] = {}
    for f in ("llm", "other"):
        for c in set(PRECISION_CLASS.values()):
            vals = [
                math.log(s.row.throughput / s.mfu_sol)
                for s in train
                if s.family == f and PRECISION_CLASS[s.row.precision] == c
            ]
            if vals:
                mfu[f, c] = statistics.median(vals)
    by_source: dict[str, dict[str, list[float]]] = {}
    for s in data.samples:
        fam = s.family
        model = sample_efficiency(learned.model, s) * s.sol
        const = math.exp(mfu.get((fam, PRECISION_CLASS[s.row.precision]), k[fam])) * s.mfu_sol
        phys = math.exp(k[fam]) * s.sol
        errs = by_source.setdefault(s.row.origin, {"model": [], "const": [], "phys": []})
        for name, pred in (("model", model), ("const", const), ("phys", phys)):
            errs[name].append(abs(pred - s.row.throughput) / s.row.throughput)
    print(
        f"external validation: {len(data.samples)} measured runs from sources never trained on "
        f"({len(data.skipped)} not modelled: GPU or model not in the catalogue)"
    )
    for source, errs in sorted(by_source.items()):
        print(f"{source}:")
        print(_line("model", errs["model"]))
        print(_line("constant MFU per precision (fitted on training rows)", errs["const"]))
        print(_line("physical x one constant (fitted on training rows)", errs["phys"]))


if __name__ == "__main__":
    if "--cv" in sys.argv:
        from advisor.cli.evaluate_out import goals, scores_table
        from advisor.learned.efficiency.train import evaluation

        scores, notes = evaluation(load_knowledge())
        print(scores_table(scores))
        print("\n".join(goals(scores) + notes))
    external()
