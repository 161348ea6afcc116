"""Provides what every efficiency model shares: the query, the interval and the regime of a job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from advisor.catalog.gpus import Gpu
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.physics.speed import StepTime


@dataclass(frozen=True, slots=True, repr=False)
class Interval:
    """P10, P50 and P90 of a quantity."""

    p10: float
    p50: float
    p90: float
    note: str = field(default="", kw_only=True, compare=False)
    """What bounded it, when something did (the highest measured efficiency, the measured range): said beside
    the figures, not part of them (neither compared nor dumped)."""

    def scaled(self, factor: float) -> Interval:
        """Every percentile times a factor."""
        return Interval(self.p10 * factor, self.p50 * factor, self.p90 * factor)

    def inverted(self, numerator: float) -> Interval:
        """numerator / x, percentiles swapped so that p10 stays the smallest."""
        return Interval(numerator / self.p90, numerator / self.p50, numerator / self.p10)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Query:
    """One plan whose efficiency is asked for."""

    regime: str
    job: Job
    gpu: Gpu
    layout: Layout
    step: StepTime | None = None
    fabric_gbps_per_gpu: float = 0.0


class EfficiencyModel(Protocol):
    """Predicts achieved / speed-of-light for plans; implementations: prior by regime, learned from
    benchmarks."""

    name: str
    """Shown in every output that uses it, e.g. 'prior by regime (assumptions.toml)'."""

    def estimate(self, queries: Sequence[Query]) -> list[Interval]:
        """One interval per query, each within (0, 1]."""
        ...


def regime_of(job: Job) -> str:
    """The efficiency regime of a training job (inference has two: decode and prefill)."""
    if job.kind in ("lora", "qlora"):
        return job.kind
    if job.kind == "inference":
        return "decode"
    if job.model_kind == "llm":
        return "llm-pretrain" if job.kind == "pretrain" else "llm-finetune"
    return "other-train"
