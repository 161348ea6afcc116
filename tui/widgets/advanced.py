"""Provides AdvancedSection: the model step's collapsed section for the configuration the user states."""

from __future__ import annotations

from textual.widgets import Collapsible, Input

from tui.form import ADVANCED_FIELDS, CHOICES, LABELS
from tui.widgets.field import FieldRow
from tui.widgets.segmented import Segmented

# (placeholder, hint) of each typed Advanced field; blank leaves the value to the search.
TYPED: dict[str, tuple[str, str]] = {
    "tp": ("blank: chosen", "GPUs splitting each layer"),
    "pp": ("blank: chosen", "pipeline stages"),
    "cp": ("blank: chosen", "GPUs splitting each sequence"),
    "ep": ("blank: chosen", "GPUs splitting the experts (MoE)"),
    "dp": ("blank: chosen", "model replicas"),
    "shard_group": ("blank: chosen", "hybrid sharding: shard within groups of this many"),
    "batch_size": ("blank: chosen", "sequences per GPU per step"),
    "global_batch": ("blank: default", "sequences per optimizer step"),
    "global_batch_tokens": ("e.g. 4M", "or the global batch in tokens"),
    "pp_schedule": ("1f1b or interleaved:2", "pipeline schedule"),
    "lora_rank": ("blank: default", "adapter rank"),
    "headroom": ("e.g. 10% or 0.1", "GPU memory kept free"),
}

CHOICE_HINTS: dict[str, str] = {
    "zero": "0 = DDP, 3 = FSDP full shard",
    "recompute": "activation recomputation",
    "optimizer": "optimizer state size",
    "master_weights": "an fp32 copy of the weights",
    "offload": "to host memory",
    "lora_targets": "which layers get adapters",
    "stack": "its loss path and overheads",
    "engine": "the serving engine",
}


def _row(name: str) -> FieldRow:
    control_id = name.replace("_", "-")
    if name in CHOICES:
        control = Segmented(CHOICES[name], "auto", id=control_id)
        return FieldRow(name, LABELS[name], control, hint=CHOICE_HINTS[name])
    placeholder, hint = TYPED[name]
    return FieldRow(
        name, LABELS[name], Input(placeholder=placeholder, id=control_id, select_on_focus=False), hint=hint
    )


class AdvancedSection(Collapsible):
    """Layout, batch, optimizer, LoRA, stack or engine, headroom; 'auto' or blank leaves it to the search."""

    def __init__(self) -> None:
        super().__init__(
            *(_row(name) for name in ADVANCED_FIELDS),
            title="Advanced: configuration (blank or auto: chosen for you)",
            collapsed=True,
            id="advanced",
        )
