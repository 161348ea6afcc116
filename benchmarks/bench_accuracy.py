"""Prints the efficiency model's accuracy: cross-validation on the training table (refits per fold), and the
error on measured runs from public sources that were never used for training (benchmarks/external_validation.csv)."""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

from advisor.catalog import load_knowledge
from advisor.catalog.benchmarks import parse_benchmarks
from advisor.efficiency.dataset import build_dataset
from advisor.efficiency.evaluate import percentile, rank_accuracy, scores_table
from advisor.efficiency.learned import load_learned
from advisor.efficiency.prior import PriorEfficiency

EXTERNAL = Path(__file__).with_name("external_validation.csv")


def external() -> None:
    knowledge = load_knowledge()
    if not EXTERNAL.exists():
        print("no external validation set")
        return
    rows = parse_benchmarks(EXTERNAL.read_text(encoding="utf-8"), EXTERNAL.name)
    data = build_dataset(knowledge, rows)
    learned = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    assert learned is not None
    model = learned.model
    logs = [model.predict_log(s.features) for s in data.samples]
    errors = [abs(min(math.exp(p), 1.0) * s.sol - s.row.throughput) / s.row.throughput
              for s, p in zip(data.samples, logs)]
    train_logs = [math.log(min(max(s.efficiency, 1e-4), 1.0)) for s in build_dataset(
        knowledge, parse_benchmarks(knowledge.root.joinpath("benchmarks.csv").read_text())).samples]
    constant = statistics.median(train_logs)
    base = [abs(min(math.exp(constant), 1.0) * s.sol - s.row.throughput) / s.row.throughput for s in data.samples]
    print(f"external validation ({len(data.samples)} measured runs from sources not used in training, "
          f"{len(data.skipped)} not modelled):")
    print(f"  model:    median error {statistics.median(errors):.1%}, P90 {percentile(errors, 90):.1%}, "
          f"rank accuracy {rank_accuracy(data.samples, logs):.1%}")
    print(f"  constant: median error {statistics.median(base):.1%}, P90 {percentile(base, 90):.1%}")
    by_workload: dict[str, list[float]] = {}
    for s, e in zip(data.samples, errors):
        by_workload.setdefault(s.row.workload, []).append(e)
    for w, errs in sorted(by_workload.items()):
        print(f"    {w:<22} {len(errs):3d} runs, median error {statistics.median(errs):.1%}")


if __name__ == "__main__":
    if "--external-only" not in sys.argv:
        from advisor.efficiency.train import evaluation

        scores, notes = evaluation(load_knowledge())
        print(scores_table(scores))
        print("\n".join(notes))
    external()
