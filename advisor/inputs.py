"""Provides the user's question as validated, frozen models: the workload and its constraints."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from advisor.catalog.common import Strict

WorkloadKind = Literal["pretrain", "finetune", "lora", "qlora", "inference"]
Precision = Literal["auto", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"]
Optimizer = Literal["adamw", "adam8bit", "sgd"]
Objective = Literal["cheapest", "fastest", "balanced"]
Deployment = Literal["cloud", "on-prem"]
PricingPlan = Literal["on-demand", "spot", "reserved"]
Demand = Literal["static", "fluctuating", "high"]

WORKLOADS: tuple[str, ...] = ("pretrain", "finetune", "lora", "qlora", "inference")
TRAINING_PRECISIONS: tuple[str, ...] = ("auto", "fp32", "tf32", "fp16", "bf16", "fp8")
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")


class Workload(Strict):
    """What is to be run: the job, the model and its data or load."""

    kind: WorkloadKind | None = None
    """None: fine-tuning for a catalogue LLM, training for any other model."""
    model: str | None = None
    """A catalogue id or alias."""
    params: PositiveFloat | None = None
    """A custom dense transformer of this many parameters (instead of model)."""
    precision: Precision = "auto"
    seq_len: PositiveInt | None = None
    batch_size: PositiveInt | None = Field(default=None, description="micro-batch per GPU")
    tokens: PositiveFloat | None = None
    samples: PositiveFloat | None = None
    epochs: PositiveFloat = 1.0
    dataset_gb: float = Field(default=0.0, ge=0)
    optimizer: Optimizer = "adamw"
    lora_rank: PositiveInt | None = None
    requests_per_s: PositiveFloat | None = None
    prompt_tokens: PositiveInt | None = None
    output_tokens: PositiveInt | None = None
    tpot_ms: PositiveFloat | None = None
    ttft_ms: PositiveFloat | None = None

    @model_validator(mode="after")
    def _one_model(self) -> Workload:
        if (self.model is None) == (self.params is None):
            raise ValueError("give exactly one of model (a catalogue id) or params (a custom size)")
        if self.kind != "inference" and self.precision in ("int8", "int4"):
            raise ValueError(f"precision {self.precision} is for inference; training takes "
                             f"{', '.join(TRAINING_PRECISIONS)} (QLoRA's 4-bit base is implied by --workload qlora)")
        if self.tokens is not None and self.samples is not None:
            raise ValueError("give either tokens or samples, not both")
        return self


class Constraints(Strict):
    """What the answer must respect and optimise."""

    budget_usd: PositiveFloat | None = None
    budget_period: Literal["job", "month"] = "job"
    deadline_hours: PositiveFloat | None = None
    deployment: Deployment = "cloud"
    pricing: PricingPlan = "on-demand"
    demand: Demand = "static"
    providers: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    objective: Objective = "balanced"
    top: PositiveInt = 5
    max_gpus: int = Field(default=1024, ge=1, le=1024)
    headroom: float | None = Field(default=None, ge=0.0, lt=0.9)
    fabric: str | None = None
    max_price_age_months: float = Field(default=12.0, gt=0, le=600)
