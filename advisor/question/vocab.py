"""Provides the closed vocabularies of the inputs, defined once: the Literal types and the CLI's choices.

Pydantic-free on purpose: `gpu-advisor --help` builds its choice lists from here without importing the models.
"""

from __future__ import annotations

from typing import Literal, get_args

WorkloadKind = Literal["pretrain", "finetune", "lora", "qlora", "inference"]
Precision = Literal["auto", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"]
Optimizer = Literal["adamw", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd", "lion", "adafactor"]
Stack = Literal[
    "axolotl",
    "composer",
    "deepspeed",
    "fsdp",
    "hf",
    "llama-factory",
    "megatron",
    "torchtitan",
    "torchtune",
    "trl",
    "unsloth",
]
Engine = Literal["vllm", "sglang", "trtllm", "lmdeploy", "tgi"]
Recompute = Literal["none", "selective", "full"]
SloPercentile = Literal[50, 90, 99]
Offload = Literal["none", "optimizer", "params"]
FusedLoss = Literal["off", "liger", "flash-attn", "chunked"]
RequestLengths = Literal["fixed", "sharegpt"]
MoeDispatcher = Literal["alltoall", "allgather", "deepep"]
LoraTargets = Literal["all", "attention"]
Objective = Literal["cheapest", "fastest", "balanced"]
Deployment = Literal["cloud", "on-prem"]
PricingPlan = Literal["on-demand", "spot", "reserved"]
Demand = Literal["static", "fluctuating", "high"]
BudgetPeriod = Literal["job", "month"]

WORKLOADS: tuple[str, ...] = get_args(WorkloadKind)
PRECISIONS: tuple[str, ...] = get_args(Precision)
TRAINING_PRECISIONS: tuple[str, ...] = tuple(p for p in PRECISIONS if p not in ("int8", "int4"))
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
OPTIMIZER_ALIASES = {"adam8bit": "adamw-8bit"}  # the name before adamw-8bit, still read
STACKS: tuple[str, ...] = get_args(Stack)
# The stacks of the measured runs only (knowledge/training_stacks.toml `data_only`), read as the stack their
# `runs_as` names (a test holds the two equal; --help reads no catalogue).
STACK_ALIASES = {
    "flash-attn": "fsdp",
    "in-house": "megatron",
    "litgpt": "fsdp",
    "megatron-deepspeed": "megatron",
    "metaseq": "fsdp",
    "nanotron": "megatron",
    "ngc-pytorch": "fsdp",
    "pytorch": "fsdp",
    "pytorch-fsdp": "fsdp",
}
ENGINES: tuple[str, ...] = get_args(Engine)
DEFAULT_ENGINE = "vllm"
"""The serving engine an answer assumes when none is given: notes, configuration and launch file alike."""
RECOMPUTES: tuple[str, ...] = get_args(Recompute)
RECOMPUTE_MODULES: tuple[str, ...] = (
    "core_attn",
    "moe_act",
    "layernorm",
    "mla_up_proj",
    "mlp",
    "moe",
    "shared_experts",
    "gdn_norm_out",
    "gdp_in_proj",
    "gdp_qkv",
    "mhc",
)
"""Megatron-Core's recompute modules (--recompute-modules, with --recompute-granularity selective), the set
its TransformerConfig accepts (NVIDIA/Megatron-LM@d98e8a64ddf3:
megatron/core/transformer/transformer_config.py, __post_init__'s allowed_modules); unset, Megatron recomputes
["core_attn"]."""
SLO_PERCENTILES: tuple[int, ...] = get_args(SloPercentile)
OFFLOADS: tuple[str, ...] = get_args(Offload)
FUSED_LOSSES: tuple[str, ...] = get_args(FusedLoss)
REQUEST_LENGTHS: tuple[str, ...] = get_args(RequestLengths)
MOE_DISPATCHERS: tuple[str, ...] = get_args(MoeDispatcher)
LORA_TARGETS: tuple[str, ...] = get_args(LoraTargets)
OBJECTIVES: tuple[str, ...] = get_args(Objective)
DEPLOYMENTS: tuple[str, ...] = get_args(Deployment)
PRICING_PLANS: tuple[str, ...] = get_args(PricingPlan)
DEMANDS: tuple[str, ...] = get_args(Demand)
BUDGET_PERIODS: tuple[str, ...] = get_args(BudgetPeriod)
