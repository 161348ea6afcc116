"""Provides the workload kinds with when to choose each, and presets that fill the wizard for common jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS: tuple[tuple[str, str, str], ...] = (
    (
        "pretrain",
        "Pre-training",
        "Train a model from random weights on a large data set: the most compute per parameter.",
    ),
    (
        "finetune",
        "Full fine-tuning",
        "Update every weight of an existing model on your data: best quality, memory for all gradients.",
    ),
    (
        "lora",
        "LoRA",
        "Train small low-rank adapters on a frozen 16-bit model: a fraction of full fine-tuning's memory.",
    ),
    (
        "qlora",
        "QLoRA",
        "LoRA on a 4-bit quantised base model: the cheapest way to fine-tune a large LLM, somewhat slower.",
    ),
    (
        "inference",
        "Inference",
        "Serve a trained model to users at a request rate and latency target, billed per month.",
    ),
)
"""(id, label, when to choose it) for each workload kind the core accepts."""


@dataclass(frozen=True)
class Preset:
    """A common job that fills the wizard's fields."""

    id: str
    title: str
    summary: str
    values: dict[str, Any] = field(default_factory=dict)


PRESETS: tuple[Preset, ...] = (
    Preset(
        "inspection",
        "Quality-inspection model (field guide)",
        "Retrain ResNet-50 on 200k factory images x 30 epochs to reach 95% accuracy, within 72 h.",
        {"kind": "pretrain", "model": "resnet50", "samples": "200k", "epochs": "30", "deadline_hours": "72"},
    ),
    Preset(
        "lora-70b",
        "Fine-tune a 70B LLM with LoRA",
        "LoRA on Llama 2 70B over 100M tokens, within a $20k budget.",
        {"kind": "lora", "model": "llama-2-70b", "tokens": "100M", "budget_usd": "20000"},
    ),
    Preset(
        "chat-8b",
        "Serve a 7-8B chat model",
        "Llama 3.1 8B at 20 requests/s, 512 prompt + 256 output tokens, 50 ms per output token.",
        {
            "kind": "inference",
            "model": "llama-3.1-8b",
            "requests_per_s": "20",
            "prompt_tokens": "512",
            "output_tokens": "256",
            "tpot_ms": "50",
            "budget_period": "month",
        },
    ),
    Preset(
        "pretrain-175b",
        "Pre-train a 100B+ model",
        "GPT-3 175B on 300B tokens, finished within 90 days.",
        {"kind": "pretrain", "model": "gpt3-175b", "tokens": "300B", "deadline_hours": "90d"},
    ),
)
"""The presets offered on the first step."""


def preset(preset_id: str) -> Preset:
    """One preset by id (KeyError for an unknown id)."""
    for p in PRESETS:
        if p.id == preset_id:
            return p
    raise KeyError(preset_id)
