"""Provides the "as a user types it" score of `model evaluate`: each paper, report and independent LLM run
predicted from its model, GPU, count, precision and sequence only (the tool chooses the stack, layout,
recomputation and batch), by a model fitted without the run's source, against the constant MFU. The
prediction itself is the answer stage's (`predict`), handed in by the command: this stage sits below it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from advisor.catalog.loader import Knowledge
from advisor.job.door import question
from advisor.job.inputs import Workload
from advisor.learned.efficiency.base import EfficiencyModel
from advisor.learned.efficiency.bounds import PRECISION_CLASS
from advisor.learned.efficiency.samples import Sample

ThroughputOf = Callable[[Workload, str, int, EfficiencyModel], float | None]
"""The predicted throughput of a workload on GPU x count with an efficiency model (None: no answer)."""


@dataclass(frozen=True, slots=True, repr=False)
class TypedScore:
    """The errors of one family of sources, as typed."""

    family: str
    runs: int
    sources: int
    median_ape: float
    balanced_ape: float
    const_median_ape: float
    const_balanced_ape: float
    ratio: float
    """Median predicted / measured."""
    skipped: int


def _const_mfu(train: Sequence[Sample], precision: str) -> float:
    """The median MFU of the training rows of the precision class (all classes when it has none)."""
    pc = PRECISION_CLASS[precision]
    values = [s.row.throughput / s.mfu_sol for s in train if PRECISION_CLASS[s.row.precision] == pc]
    return statistics.median(values or [s.row.throughput / s.mfu_sol for s in train])


def _held_out_model(knowledge: Knowledge, shipped: Any, samples: Sequence[Sample], source: str) -> Any:
    """The learned model as shipped, refitted without one source (penalty, bounds and interval too)."""
    from advisor.learned.efficiency.bounds_fit import fit_bounds
    from advisor.learned.efficiency.learned import LearnedEfficiency
    from advisor.learned.efficiency.linear_fit import choose_lambda, fit_linear
    from advisor.learned.efficiency.prior import PriorEfficiency

    train = [s for s in samples if s.row.origin != source]
    llm = [s for s in train if s.family == "llm"]
    lam, _ = choose_lambda(llm)
    old = shipped.model.linear
    linear = fit_linear(llm, lam, old.interval, old.widen, old.widen_far)
    exported = replace(shipped.model, linear=linear, bounds=fit_bounds(train))
    return LearnedEfficiency(
        exported, knowledge.assumptions, PriorEfficiency(knowledge.assumptions), 0, shipped.stacks
    )


def as_typed(
    knowledge: Knowledge, samples: Sequence[Sample], throughput_of: ThroughputOf
) -> list[TypedScore]:
    """Score every non-vendor LLM run as a user would type it, per family of source."""
    from advisor.learned.efficiency.learned import load_learned
    from advisor.learned.efficiency.prior import PriorEfficiency
    from advisor.question.errors import AdvisorError

    shipped = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    if shipped is None or shipped.model.linear is None:
        return []
    runs = [s for s in samples if s.family == "llm" and s.row.source_family != "vendor"]
    models: dict[str, EfficiencyModel] = {}
    rows: dict[str, list[tuple[str, float, float]]] = {}
    skipped: dict[str, int] = {}
    for s in runs:
        r = s.row
        model = models.get(r.origin) or models.setdefault(
            r.origin, _held_out_model(knowledge, shipped, samples, r.origin)
        )
        workload = question(
            Workload, dict(model=r.workload, kind=r.kind, precision=r.precision, seq_len=r.seq_len or None)
        )
        try:
            got = throughput_of(workload, r.gpu, r.count, model)
        except AdvisorError:
            got = None
        if got is None:
            skipped[r.source_family] = skipped.get(r.source_family, 0) + 1
            continue
        train = [t for t in samples if t.row.origin != r.origin and t.family == "llm"]
        const = _const_mfu(train, r.precision) * s.mfu_sol
        rows.setdefault(r.source_family, []).append((r.origin, got / r.throughput, const / r.throughput))
    return [_score(family, got, skipped.get(family, 0)) for family, got in sorted(rows.items())]


def _score(family: str, got: list[tuple[str, float, float]], skipped: int) -> TypedScore:
    by_source: dict[str, list[tuple[float, float]]] = {}
    for origin, model, const in got:
        by_source.setdefault(origin, []).append((abs(model - 1), abs(const - 1)))
    balanced = [statistics.median(e for e, _ in v) for v in by_source.values()]
    const_balanced = [statistics.median(c for _, c in v) for v in by_source.values()]
    return TypedScore(
        family,
        len(got),
        len(by_source),
        statistics.median(abs(m - 1) for _, m, _ in got),
        sum(balanced) / len(balanced),
        statistics.median(abs(c - 1) for _, _, c in got),
        sum(const_balanced) / len(const_balanced),
        math.exp(statistics.median(math.log(m) for _, m, _ in got)),
        skipped,
    )


def as_typed_lines(knowledge: Knowledge, samples: Sequence[Sample], throughput_of: ThroughputOf) -> list[str]:
    """The as-typed section of `model evaluate`."""
    scores = as_typed(knowledge, samples, throughput_of)
    if not scores:
        return []
    lines = [
        "",
        "as a user types it (model, GPU, count, precision, sequence; the tool chooses the stack, layout, "
        "recomputation and batch), each run predicted by the model refitted without its source:",
    ]
    for t in scores:
        lines.append(
            f"  {t.family:<12} {t.runs:3d} runs from {t.sources:2d} sources: median error {t.median_ape:.1%} "
            f"(source-balanced {t.balanced_ape:.1%}), median predicted/measured {t.ratio:.2f}x; constant MFU "
            f"{t.const_median_ape:.1%} (source-balanced {t.const_balanced_ape:.1%})"
            + (f"; {t.skipped} runs the tool refuses as typed (memory or batch)" if t.skipped else "")
        )
    return lines
