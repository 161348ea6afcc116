"""Provides the user's question as validated, frozen records: the workload and its constraints."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from advisor.catalog.models import ModelSpec
from advisor.job.spec_check import check_spec
from advisor.question.errors import InputError
from advisor.question.fields import DEFAULT_MAX_GPUS, FIELDS, default_of
from advisor.question.records import PosFloat as PositiveFloat
from advisor.question.records import PosInt as PositiveInt
from advisor.question.records import dump
from advisor.question.vocab import (  # noqa: F401  (re-exported: the rest of the core names them from here)
    OPTIMIZERS,
    PRECISIONS,
    STACK_ALIASES,
    STACKS,
    TRAINING_PRECISIONS,
    WORKLOADS,
    BudgetPeriod,
    Demand,
    Deployment,
    Engine,
    FusedLoss,
    LoraTargets,
    MoeDispatcher,
    Objective,
    Offload,
    Optimizer,
    Precision,
    PricingPlan,
    Recompute,
    RequestLengths,
    SloPercentile,
    Stack,
    WorkloadKind,
)

MAX_COUNT = int(FIELDS["max_gpus"].bound.hi)  # type: ignore[union-attr]  # max_gpus has a bound
"""The most GPUs a plan may have (the registry's bound of max_gpus)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class RunConfig:
    """The run's configuration as the user states it; every None is chosen by the search."""

    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    cp: PositiveInt | None = None
    ep: PositiveInt | None = None
    dp: PositiveInt | None = None
    zero: Literal[0, 1, 2, 3] | None = None
    """0 = DDP (or a single replica), 3 = FSDP full shard."""
    shard_group: PositiveInt | None = None
    """Hybrid sharding (HSDP): shard within groups of this many data-parallel ranks, replicate across them."""
    recompute: Recompute | None = None
    recompute_modules: tuple[str, ...] | None = None
    """Megatron-Core's selective recomputation by module (--recompute-modules; vocab.RECOMPUTE_MODULES):
    stated, the plan recomputes these modules and no others (recompute 'selective')."""
    global_batch: PositiveInt | None = None
    """Sequences (or samples) per optimizer step."""
    global_batch_tokens: PositiveFloat | None = None
    pp_schedule: str | None = None
    """'1f1b' or 'interleaved:V' (V virtual stages per GPU)."""
    master_weights: bool | None = None
    """False: pure 16-bit training without an fp32 master copy."""
    offload: Offload | None = None
    fused_loss: FusedLoss | None = None
    """'liger': the output layer and cross entropy fused in chunks (Liger-Kernel); None: the stack's loss."""
    lora_targets: LoraTargets | None = None
    moe_dispatcher: MoeDispatcher | None = None
    """How expert-parallel ranks exchange the routed tokens (Megatron-Core's --moe-token-dispatcher-type;
    deepep: flex with the DeepEP backend); None: alltoall."""
    stack: Stack | None = None
    stack_named: str | None = field(default=None, compare=False, repr=False)
    """The stack of the measured runs the user named when it is answered as another (`--stack pytorch`:
    stack 'fsdp', stack_named 'pytorch'; vocab.STACK_ALIASES), so that the answer says so; filled from the
    value the registry read (fields.Aliased), never given itself."""
    engine: Engine | None = None
    max_num_seqs: PositiveInt | None = None
    """The serving engine's cap on running sequences (None: the engine's default on the GPU)."""
    max_batched_tokens: PositiveInt | None = None
    """The serving engine's token budget per iteration (None: its default)."""
    gpu_memory_utilization: PositiveFloat | None = None
    """Share of GPU memory the serving engine takes (None: its default)."""
    prefix_cache_hit: float | None = None
    """Share of each prompt's tokens the serving engine finds in its prefix cache (a shared system prompt,
    or the same prompts sent again); None: none."""
    request_lengths: RequestLengths | None = None
    """How the serving requests' lengths spread around the stated prompt and output tokens ('sharegpt': a
    ShareGPT-like spread, advisor/physics/lengths.py); None: every request the stated lengths."""

    def __post_init__(self) -> None:
        named = getattr(self.stack, "given", None)  # fields.Aliased: the name given travels with the value
        if named is not None:
            object.__setattr__(self, "stack", str(self.stack))
            object.__setattr__(self, "stack_named", named)
        elif self.stack_named is not None and STACK_ALIASES.get(self.stack_named) != self.stack:
            object.__setattr__(self, "stack_named", None)  # replaced by another stack: the name is stale
        if self.pp_schedule is not None:
            virtual_stages(self.pp_schedule)
        if self.recompute_modules is not None:
            _check_modules(self)
        if self.global_batch is not None and self.global_batch_tokens is not None:
            raise InputError(
                "global_batch_tokens: given with a global batch in sequences; give one of the two",
                field="global_batch_tokens",
                value=self.global_batch_tokens,
                problem="is given with a global batch in sequences",
                accepted="one of the two, not both",
            )
        if self.shard_group is not None and self.zero is not None and self.zero == 0:
            raise InputError(
                "shard_group: hybrid sharding needs ZeRO 1, 2 or 3, not 0",
                field="shard_group",
                value=self.shard_group,
                problem="(hybrid sharding) needs ZeRO 1, 2 or 3, not 0",
                accepted="a ZeRO stage of 1, 2 or 3 with it",
            )

    def given(self) -> dict[str, object]:
        """The values the user stated."""
        return dump(self, exclude_none=True)


def _check_modules(c: RunConfig) -> None:
    """Recompute modules are Megatron's selective granularity: stated with another recomputation, or none at
    all, is a one-line error; stated alone, the recomputation is selective."""
    if not c.recompute_modules:
        raise InputError(
            field="recompute_modules",
            value=c.recompute_modules,
            problem="names no module",
            accepted="one or more of Megatron-Core's recompute modules, e.g. layernorm,moe_act",
        )
    if c.recompute not in (None, "selective"):
        raise InputError(
            field="recompute_modules",
            value=",".join(c.recompute_modules),
            problem=f"is Megatron's selective recomputation, not recompute {c.recompute}",
            accepted="recompute selective or blank with it",
        )
    object.__setattr__(c, "recompute", "selective")
    object.__setattr__(c, "recompute_modules", tuple(dict.fromkeys(c.recompute_modules)))


def virtual_stages(schedule: str) -> int:
    """'1f1b' -> 1, 'interleaved:V' -> V; anything else is a one-line error."""
    if schedule == "1f1b":
        return 1
    head, _, tail = schedule.partition(":")
    if head == "interleaved" and tail.isdigit() and int(tail) >= 2:
        return int(tail)
    raise InputError(
        f"pp_schedule: {schedule!r} is not a schedule; accepted 1f1b or interleaved:V with V >= 2",
        field="pp_schedule",
        value=schedule,
        problem="is not a schedule",
        accepted="1f1b or interleaved:V with V >= 2",
    )


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Workload:
    """What is to be run: the job, the model and its data or load."""

    kind: WorkloadKind | None = None
    """None: fine-tuning for a catalogue LLM, training for any other model."""
    model: str | None = None
    """A catalogue id or alias."""
    params: PositiveFloat | None = None
    """A custom dense transformer of this many parameters (instead of model)."""
    spec: ModelSpec | None = None
    """A model outside the catalogue, its shape derived from a config.json or given layer by layer; the export
    carries the derived shape so that re-running an export reproduces it without the original file."""
    precision: Precision = "auto"
    seq_len: PositiveInt | None = None
    batch_size: PositiveInt | None = None
    """Micro-batch per GPU."""
    tokens: PositiveFloat | None = None
    samples: PositiveFloat | None = None
    epochs: PositiveFloat = default_of("epochs")
    dataset_gb: float = default_of("dataset_gb")
    optimizer: Optimizer = default_of("optimizer")
    config: RunConfig = RunConfig()
    lora_rank: PositiveInt | None = None
    requests_per_s: PositiveFloat | None = None
    concurrency: PositiveInt | None = None
    """Requests in flight on the whole deployment (a closed loop); instead of requests_per_s."""
    num_prompts: PositiveInt | None = None
    """A finite burst: this many prompts sent at once (all at t=0), as a benchmark harness does."""
    prompt_tokens: PositiveInt | None = None
    output_tokens: PositiveInt | None = None
    tpot_ms: PositiveFloat | None = None
    ttft_ms: PositiveFloat | None = None
    slo_percentile: SloPercentile | None = None
    """The percentile of requests the TTFT and TPOT targets hold for (P50, P90 or P99)."""
    profile: str | None = None
    """The calibration profile whose runs correct the figures (None: the GPU's and stack's default)."""
    stack_version: str | None = None
    """The version of the stack or engine the user runs (a drift warning when newer than the runs; serving
    simulates that engine release's scheduler, knowledge/serving_engines.toml `before_version` tiers)."""

    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The fields a door received (advisor/job/door.py records them); not part of the value."""

    # adam8bit: the optimizer's name before issue 8, still read (the registry's alias, at the door)

    def __post_init__(self) -> None:
        _shape(self.spec)
        _profile(self.profile)
        _version(self.stack_version)
        given = [n for n in ("model", "params", "spec") if getattr(self, n) is not None]
        if len(given) != 1:
            extra = given[1] if given else "model"
            problem = "is given with another model" if given else "is missing"
            raise InputError(
                f"{extra}: {problem}; give exactly one of model (a catalogue id), params (a custom size) "
                "or a model shape (a config.json, or layers, hidden, heads, kv_heads, ffn and vocab)",
                field=extra,
                value=getattr(self, extra) if given and extra != "spec" else None,
                problem=problem,
                accepted="exactly one of a catalogue model, a custom size or a model shape",
            )
        if self.kind != "inference" and self.precision in ("int8", "int4"):
            raise InputError(
                field="precision",
                value=self.precision,
                problem="is for inference",
                accepted=f"training takes {', '.join(TRAINING_PRECISIONS)} (QLoRA's 4-bit base comes "
                "with the QLoRA workload)",
            )
        if self.tokens is not None and self.samples is not None:
            raise InputError(
                field="samples",
                value=self.samples,
                problem="is given with training tokens",
                accepted="tokens or samples, not both",
            )


def stated(workload: Workload) -> frozenset[str]:
    """The workload fields the user gave: those its door received, and any not at its default (a workload
    built in code)."""
    return workload.given | {
        f.name for f in fields(workload) if f.compare and getattr(workload, f.name) != f.default
    }


def _profile(name: str | None) -> str | None:
    if name is not None:
        from advisor.catalog.run_store import check_profile_name

        check_profile_name(name)
    return name


def _version(text: str | None) -> str | None:
    import re

    if text is not None and not re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,31}", text):
        raise InputError(
            field="stack_version",
            value=text,
            problem="is not a version",
            accepted="a version such as 0.8.5 or 24.07 (letters, digits, '.', '+', '_', '-')",
        )
    return text


def _shape(spec: ModelSpec | None) -> ModelSpec | None:
    if spec is not None:
        check_spec(spec)
    return spec


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Constraints:
    """What the answer must respect and optimise (each number held to the field registry's bounds)."""

    budget_usd: PositiveFloat | None = None
    budget_period: BudgetPeriod = default_of("budget_period")
    deadline_hours: PositiveFloat | None = None
    deployment: Deployment = default_of("deployment")
    pricing: PricingPlan = default_of("pricing")
    demand: Demand = default_of("demand")
    providers: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    objective: Objective = default_of("objective")
    top: PositiveInt = default_of("top")
    max_gpus: int = DEFAULT_MAX_GPUS
    headroom: float | None = None
    fabric: str | None = None
    max_price_age_months: float = default_of("max_price_age_months")
