"""Provides the user's question as validated, frozen models: the workload and its constraints."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from advisor.catalog.common import Strict
from advisor.catalog.models import ModelSpec
from advisor.question.errors import InputError
from advisor.question.vocab import (  # noqa: F401  (re-exported: the rest of the core names them from here)
    OPTIMIZERS,
    PRECISIONS,
    STACKS,
    TRAINING_PRECISIONS,
    WORKLOADS,
    BudgetPeriod,
    Demand,
    Deployment,
    Engine,
    LoraTargets,
    Objective,
    Offload,
    Optimizer,
    Precision,
    PricingPlan,
    Recompute,
    SloPercentile,
    Stack,
    WorkloadKind,
)

MAX_COUNT = 65536


class RunConfig(Strict):
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
    global_batch: PositiveInt | None = None
    """Sequences (or samples) per optimizer step."""
    global_batch_tokens: PositiveFloat | None = None
    pp_schedule: str | None = None
    """'1f1b' or 'interleaved:V' (V virtual stages per GPU)."""
    master_weights: bool | None = None
    """False: pure 16-bit training without an fp32 master copy."""
    offload: Offload | None = None
    lora_targets: LoraTargets | None = None
    stack: Stack | None = None
    engine: Engine | None = None

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        if self.pp_schedule is not None:
            virtual_stages(self.pp_schedule)
        if self.global_batch is not None and self.global_batch_tokens is not None:
            raise InputError(
                "give either --global-batch (sequences) or --global-batch-tokens, not both",
                field="global_batch_tokens",
                value=self.global_batch_tokens,
                problem="is given with a global batch in sequences",
                accepted="one of the two, not both",
            )
        if self.shard_group is not None and self.zero is not None and self.zero == 0:
            raise InputError(
                "--shard-group (hybrid sharding) needs --zero 1, 2 or 3, not 0",
                field="shard_group",
                value=self.shard_group,
                problem="(hybrid sharding) needs ZeRO 1, 2 or 3, not 0",
            )
        return self

    def given(self) -> dict[str, object]:
        """The values the user stated."""
        return self.model_dump(exclude_none=True)


def virtual_stages(schedule: str) -> int:
    """'1f1b' -> 1, 'interleaved:V' -> V; anything else is a one-line error."""
    if schedule == "1f1b":
        return 1
    head, _, tail = schedule.partition(":")
    if head == "interleaved" and tail.isdigit() and int(tail) >= 2:
        return int(tail)
    raise InputError(
        f"--pp-schedule {schedule!r}: accepted 1f1b or interleaved:V with V >= 2",
        field="pp_schedule",
        value=schedule,
        problem="is not a schedule",
        accepted="1f1b or interleaved:V with V >= 2",
    )


class Workload(Strict):
    """What is to be run: the job, the model and its data or load."""

    kind: WorkloadKind | None = None
    """None: fine-tuning for a catalogue LLM, training for any other model."""
    model: str | None = None
    """A catalogue id or alias."""
    params: PositiveFloat | None = None
    """A custom dense transformer of this many parameters (instead of model)."""
    spec: ModelSpec | None = None
    """A model outside the catalogue, its shape derived from a config.json (--config) or given (--layers ...);
    the export carries the derived shape so that --from reproduces it without the original file."""
    precision: Precision = "auto"
    seq_len: PositiveInt | None = None
    batch_size: PositiveInt | None = Field(default=None, description="micro-batch per GPU")
    tokens: PositiveFloat | None = None
    samples: PositiveFloat | None = None
    epochs: PositiveFloat = 1.0
    dataset_gb: float = Field(default=0.0, ge=0)
    optimizer: Optimizer = "adamw"
    config: RunConfig = RunConfig()
    lora_rank: PositiveInt | None = None
    requests_per_s: PositiveFloat | None = None
    prompt_tokens: PositiveInt | None = None
    output_tokens: PositiveInt | None = None
    tpot_ms: PositiveFloat | None = None
    ttft_ms: PositiveFloat | None = None
    slo_percentile: SloPercentile | None = None
    """The percentile of requests the TTFT and TPOT targets hold for (P50, P90 or P99)."""

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("optimizer") == "adam8bit":  # the name before issue 8
            data = {**data, "optimizer": "adamw-8bit"}
        return data

    @model_validator(mode="after")
    def _one_model(self) -> Workload:
        if sum(x is not None for x in (self.model, self.params, self.spec)) != 1:
            raise ValueError(
                "give exactly one of model (a catalogue id), params (a custom size) or a model "
                "shape (--config config.json, or --layers --hidden --heads --kv-heads --ffn --vocab)"
            )
        if self.kind != "inference" and self.precision in ("int8", "int4"):
            raise ValueError(
                f"precision {self.precision} is for inference; training takes "
                f"{', '.join(TRAINING_PRECISIONS)} (QLoRA's 4-bit base is implied by --workload qlora)"
            )
        if self.tokens is not None and self.samples is not None:
            raise ValueError("give either tokens or samples, not both")
        return self


class Constraints(Strict):
    """What the answer must respect and optimise."""

    budget_usd: PositiveFloat | None = None
    budget_period: BudgetPeriod = "job"
    deadline_hours: PositiveFloat | None = None
    deployment: Deployment = "cloud"
    pricing: PricingPlan = "on-demand"
    demand: Demand = "static"
    providers: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    objective: Objective = "balanced"
    top: PositiveInt = 5
    max_gpus: int = Field(default=1024, ge=1, le=MAX_COUNT)
    headroom: float | None = Field(default=None, ge=0.0, lt=0.9)
    fabric: str | None = None
    max_price_age_months: float = Field(default=12.0, gt=0, le=600)
