"""Provides the result records: ranked plans, the cost-time front and reasons."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.answer.plan_out import AlternativeOut as AlternativeOut
from advisor.answer.plan_out import ConfigValue as ConfigValue
from advisor.answer.plan_out import GoodputOut as GoodputOut
from advisor.answer.plan_out import LayoutOut as LayoutOut
from advisor.answer.plan_out import MemoryOut as MemoryOut
from advisor.answer.plan_out import Throughput as Throughput
from advisor.answer.step_out import StepBreakdown
from advisor.question.assumed import Assumed
from advisor.question.records import dump

if TYPE_CHECKING:  # field types only: a record needs no class at run time, and a prediction no ops modules
    from advisor.answer.serving_out import ServingOut
    from advisor.job.inputs import Constraints, Workload
    from advisor.learned.efficiency.base import Interval
    from advisor.ops.launch import LaunchArtefacts
    from advisor.ops.plan import OpsPlan
    from advisor.ops.plan_facts import PlanFacts
    from advisor.ops.tco import TcoOut
    from advisor.search.cost import CostRange

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class PriceOut:
    """The offer a plan is priced on."""

    provider: str
    region: str
    instance: str
    pricing: str
    usd_per_gpu_hour: float
    usd_per_hour: float
    instances: int
    billed_gpus: int
    date: dt.date
    source: str
    includes_host: bool
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class RuleOut:
    """A rule that fired."""

    id: str
    kind: str
    message: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class PlanOut:
    """One ranked plan."""

    rank: int
    gpu: str
    gpu_name: str
    count: int
    nodes: int
    parallelism: str
    layout: LayoutOut
    precision: str
    memory_per_gpu_gb: float
    memory: MemoryOut
    throughput: Throughput
    step_time_s: Interval | None = None
    efficiency: Interval
    bound: str
    hours: Interval
    """Training: time to finish the job. Inference: hours billed per month of service."""
    cost_usd: CostRange
    """Training: the job. Inference: one month of service."""
    price: PriceOut | None = None
    reasons: tuple[str, ...] = ()
    rules: tuple[RuleOut, ...] = ()
    advice: tuple[str, ...] = ()
    serving: ServingOut | None = None
    on_front: bool = False
    configuration: dict[str, ConfigValue] = field(default_factory=dict)
    alternatives: tuple[AlternativeOut, ...] = ()
    goodput: GoodputOut | None = None
    step_breakdown: StepBreakdown | None = None
    """The P50 training step by operation class (an LLM: composed from measured operations)."""

    def facts(self) -> PlanFacts:
        """The plain values operations planning and launch files read."""
        from advisor.ops.plan_facts import PlanFacts

        lay, price, srv = self.layout, self.price, self.serving
        return PlanFacts(
            gpu=self.gpu,
            count=self.count,
            nodes=self.nodes,
            precision=self.precision,
            tp=lay.tp,
            pp=lay.pp,
            dp=lay.dp,
            sharding=lay.sharding,
            recompute=lay.recompute,
            micro_batch=lay.micro_batch,
            grad_accum=lay.grad_accum,
            hours_p50=self.hours.p50,
            step_s_p50=self.step_time_s.p50 if self.step_time_s else None,
            provider=price.provider if price else None,
            instance=price.instance if price else None,
            instances=price.instances if price else None,
            replicas=srv.replicas if srv else None,
            gpus_per_replica=srv.gpus_per_replica if srv else None,
            engine=srv.engine if srv else None,
            cp=lay.cp,
            ep=lay.ep,
            virtual=lay.virtual,
            recompute_modules=_modules(self.configuration),
            moe_dispatcher=str(self.configuration["moe_dispatcher"].value)
            if "moe_dispatcher" in self.configuration
            else "alltoall",
        )


def _modules(configuration: dict[str, ConfigValue]) -> tuple[str, ...]:
    """The recompute modules a plan's configuration names (its 'a,b' value), none when it names none."""
    value = configuration.get("recompute_modules")
    return tuple(str(value.value).split(",")) if value is not None else ()


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class Suggestion:
    """A change of one input that would give a plan: the input, the value to give (None: see the outcome)
    and what it gives. Said without a front end's words; each names the input its own way."""

    field: str
    value: float | int | str | None = None
    outcome: str

    def phrase(self, name: str) -> str:
        """The suggestion with the input named by the caller: '--budget 15000: allows h100-sxm x8 in 30 h'."""
        value = (
            ""
            if self.value is None
            else f" {self.value:g}"
            if isinstance(self.value, float)
            else f" {self.value}"
        )
        return f"{name}{value}: {self.outcome}"


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class FrontPoint:
    """A plan on the cost-vs-time Pareto front."""

    gpu: str
    count: int
    hours_p50: float
    cost_mid: float
    chosen: bool = False


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class JobOut:
    """What the job resolved to."""

    model: str
    model_name: str
    kind: str
    params: float
    seq_len: int
    unit: str
    total_items: float
    assumed: tuple[Assumed, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Report:
    """The whole answer to one question."""

    schema_version: int = SCHEMA_VERSION
    workload: Workload
    constraints: Constraints
    job: JobOut
    plans: tuple[PlanOut, ...]
    front: tuple[FrontPoint, ...] = ()
    why_not: tuple[str, ...] = ()
    job_advice: tuple[RuleOut, ...] = ()
    nothing_fits: bool = False
    suggestions: tuple[Suggestion, ...] = ()
    prices_as_of: dt.date | None = None
    price_sources: tuple[str, ...] = ()
    efficiency_source: str
    catalogue_version: str
    plans_considered: int = 0
    """The plans the ranking chose from: those that fit in memory, have a price and keep within the budget and
    the deadline (one per GPU, count and replica shape): what 'N plans fit' and 'best 5 of N' count."""
    notes: tuple[Assumed, ...] = ()
    """What the answer set aside or could not source, each with the input that would change it."""
    operations: OpsPlan | None = None
    """The operations plan of the chosen plan."""
    launch: LaunchArtefacts | None = None
    """Launch artefacts of the chosen plan."""
    tco: TcoOut | None = None
    """On-prem: the TCO of owning the chosen plan's GPUs, with buy versus rent."""

    def prices_line(self) -> str:
        """'prices as of 2026-01-28 (skypilot-aws, ...)'."""
        if self.prices_as_of is None:
            return "prices: none used"
        return f"prices as of {self.prices_as_of.isoformat()} ({', '.join(self.price_sources)})"

    def plain(self) -> dict[str, Any]:
        """JSON-ready dict (dates as ISO strings)."""
        return dump(self, mode="json")
