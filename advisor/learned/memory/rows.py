"""Provides the rows of benchmarks/memory_validation.csv as the memory model builds them: job, layout and
estimate."""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from advisor.catalog.assumptions import STACK_TRAITS, StackMemory
from advisor.catalog.gpus import Gpu
from advisor.catalog.hf_config import spec_from_shape
from advisor.catalog.loader import Knowledge
from advisor.catalog.models import ModelSpec
from advisor.job.door import question
from advisor.job.inputs import RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import Job, resolve_job
from advisor.physics.memory import (
    GB,
    TrainingMemoryModel,
    comm_groups,
    default_recompute,
    overhead_central,
    usable_gb,
)
from advisor.question.vocab import STACKS

CSV_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "memory_validation.csv"
GIB = 1024**3 / GB
# Stacks the CSV names that the memory model knows under another name: NeMo trains with Megatron-Core.
STACK_OF = {"nemo": "megatron"}
GENERIC_GPU = "h100-sxm"  # a GPU with FlashAttention, its memory replaced by the row's budget
DEFAULT_OPTIMIZER = "adamw"  # torch.optim.AdamW: every stack's default where a source does not name one


@dataclass(frozen=True, slots=True, repr=False)
class Estimate:
    """One row's central estimate (GB) and the same on the footing of each memory counter."""

    device: float
    """What the GPU must hold: the verdict's figure (states, activations, allocator, context, NCCL)."""
    reserved: float
    """What torch's caching allocator reserves: the device figure less the context and NCCL buffers."""
    allocated: float
    """What autograd and the states allocate: the reserved figure less the allocator's reserve."""
    usable: float
    """What CUDA hands out on the row's GPU."""
    context: float = 0.0
    """The context and NCCL buffers: a measured 'device' peak is the allocator's reserve plus them."""

    def on_footing(self, footing: str) -> float:
        """The estimate on the footing of the counter a source measured (a measured device peak is the caching
        allocator's reserve plus the context, which with room to spare keeps freed blocks: `reserved`)."""
        device = self.reserved + self.context
        return {"device": device, "reserved": self.reserved, "allocated": self.allocated}[footing]


def read_rows(path: Path = CSV_PATH) -> list[dict[str, str]]:
    """The CSV's rows as strings (benchmarks/memory_validation.py checks them in full)."""
    with path.open(newline="", encoding="utf-8") as handle:
        return [{k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(handle)]


def _num(row: dict[str, str], key: str) -> int | None:
    return int(row[key]) if row.get(key) else None


def row_gpu(knowledge: Knowledge, row: dict[str, str]) -> Gpu:
    """The row's GPU: the catalogue part, its memory replaced by the row's figure (in GiB, as vendors state
    it) where the row gives one."""
    gpu = knowledge.gpu(row["gpu"] or GENERIC_GPU)
    if row["gpu_memory_gb"]:
        gpu = replace(gpu, memory_gb=float(row["gpu_memory_gb"]), memory_unit="GiB")
    return gpu


def footing(row: dict[str, str]) -> str:
    """Which counter the row's peak is: 'allocated' (max_memory_allocated, active), 'device' (our own rows:
    reserved plus the measured CUDA context) or 'reserved' (torchtitan's max_reserved, unnamed counters)."""
    kind = row["memory_kind"].lower()
    if "cuda context of" in kind:
        return "device"
    return "allocated" if ("allocated" in kind or "active" in kind) else "reserved"


def measured_gb(row: dict[str, str]) -> float | None:
    """The measured peak in GB on its counter's footing (our own rows: the context added back)."""
    if not row["measured_peak"]:
        return None
    value = float(row["measured_peak"]) * (GIB if row["unit"] == "GiB" else 1.0)
    if footing(row) == "device":
        context = row["memory_kind"].split("CUDA context of", 1)[1].split("GB", 1)[0]
        value += float(context)
    return value


def micro_batch(row: dict[str, str]) -> int:
    """Sequences per forward pass (pipeline rows give only the local batch: torchtitan's default is 1)."""
    if row["micro_batch"]:
        return int(row["micro_batch"])
    return 1 if int(row["pp"]) > 1 else int(row["local_batch"] or 1)


def spec_of(row: dict[str, str]) -> ModelSpec | None:
    """A row without a catalogue model: its shape as a decoder spec carrying the parameter count the row
    states (biases, tied or untied heads and parallel blocks change the count but not the shape)."""
    if row["model"]:
        return None
    dims = [int(row[k]) for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")]
    spec = spec_from_shape(*dims, gated=row["gated"] == "yes", model_id="csv-shape")
    return replace(spec, params=float(row["params"]), active_params=float(row["params"]))


def label_model(row: dict[str, str]) -> str:
    """The row's model id, or its shape."""
    return row["model"] or f"L{row['layers']}-h{row['hidden']}-a{row['heads']}/{row['kv_heads']}"


def row_stack(row: dict[str, str]) -> str:
    """The stack whose memory traits the row is built with."""
    return STACK_OF.get(row["stack"], row["stack"])


def row_recompute(knowledge: Knowledge, row: dict[str, str]) -> str:
    """The row's recomputation: as stated, else what its stack runs by default (the same choice the speed
    model makes for it, never a more lenient one)."""
    if row["recompute"]:
        return row["recompute"]
    traits = knowledge.assumptions.stack.get(row_stack(row)) or knowledge.assumptions.stack["pytorch"]
    is_llm = knowledge.model(row["model"]).kind == "llm" if row["model"] else bool(row["layers"])
    return default_recompute(traits, row["workload"]) if is_llm else "none"


def _zero(row: dict[str, str]) -> int:
    return int(row["zero_stage"]) if int(row["dp"]) * int(row["cp"]) > 1 else 0


def row_job(knowledge: Knowledge, row: dict[str, str], seq_len: int) -> Job:
    """The row's job, its stack's memory traits applied (a validation-only stack such as LitGPT is set on
    the job after resolving, since it is not a --stack value)."""
    stack = row_stack(row)
    traits = knowledge.assumptions.stack.get(stack)
    master = {"yes": True, "no": False}.get(row["master_weights"])
    if master is None and traits is not None:
        master = traits.master_weights
    config = question(
        RunConfig,
        dict(
            tp=int(row["tp"]),
            pp=int(row["pp"]),
            cp=int(row["cp"]),
            dp=int(row["dp"]),
            zero=_zero(row),
            recompute=row_recompute(knowledge, row),
            stack=stack if stack in STACKS else "hf",
            offload=row["offload"] or "none",
            master_weights=master,
        ),
    )  # CSV strings, checked by the loader
    workload = question(
        Workload,
        dict(
            model=row["model"] or None,
            spec=spec_of(row),
            kind=row["workload"],
            precision=row["precision"],
            seq_len=seq_len,
            batch_size=micro_batch(row),
            optimizer=row["optimizer"] or DEFAULT_OPTIMIZER,
            lora_rank=_num(row, "lora_rank"),
            config=config,
        ),
    )
    job = resolve_job(knowledge, workload, need_data=False)
    return job if stack in STACKS else replace(job, stack=stack)


def row_layout(knowledge: Knowledge, row: dict[str, str]) -> Layout:
    """The row's layout, exactly as published."""
    count, dp = int(row["gpu_count"]), int(row["dp"])
    zero = _zero(row)
    sharding = {0: "ddp" if dp > 1 else "none", 1: "zero1", 2: "zero2", 3: "zero3"}[zero]
    return Layout(
        count=count,
        nodes=max(1, count // 8),
        node_size=min(count, 8),
        precision=row["precision"],
        tp=int(row["tp"]),
        pp=int(row["pp"]),
        dp=dp,
        cp=int(row["cp"]),
        sharding=sharding,
        recompute=row_recompute(knowledge, row),
        micro_batch=micro_batch(row),
        # Micro-batches accumulated per step: a stack that frees its gradients holds them between these.
        grad_accum=max(1, int(row["local_batch"] or 1) // micro_batch(row)),
    )


def row_traits(knowledge: Knowledge, row: dict[str, str]) -> StackMemory:
    """The row's stack traits with the settings its source states (`settings`: trait=value;...) applied."""
    a = knowledge.assumptions
    traits = a.stack.get(row_stack(row)) or a.stack["pytorch"]
    changes: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in row.get("settings", "").split(";"))):
        name, _, value = item.partition("=")
        if name not in STACK_TRAITS or name == "recompute":
            raise ValueError(f"settings {item!r}: not a stack memory trait the row may set")
        if name in ("loss", "model_code"):
            if name == "loss" and value not in a.loss:
                raise ValueError(f"settings {item!r}: no [loss.{value}] in assumptions.toml")
            changes[name] = value
        else:
            changes[name] = {"true": True, "false": False}[value]
    return replace(traits, **changes) if changes else traits


def estimate(knowledge: Knowledge, row: dict[str, str], seq_len: int | None = None) -> Estimate:
    """The row's central estimate (GB), on every counter's footing."""
    a = knowledge.assumptions
    gpu = row_gpu(knowledge, row)
    job = row_job(knowledge, row, seq_len or int(row["seq_len"]))
    model = TrainingMemoryModel(job, gpu, row["precision"], a, row_traits(knowledge, row))
    layout = row_layout(knowledge, row)
    device = model.nominal_bytes(layout)
    act = model.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
    act *= layout.micro_batch
    # Freed gradients (TrainingMemoryModel.freed_gradients) lower what is allocated at once, but with room to
    # spare the caching allocator keeps the activations' freed blocks and takes new ones for the gradients:
    # its reserve then holds both, as the old sum (under pressure it releases the cache and retries first).
    freed = model.freed_gradients(layout)
    context = overhead_central(comm_groups(layout), a)
    states = model.fixed_bytes(layout) - context
    reserved = states + act * (1.0 + model.frag)
    allocated = max(states - freed + act, states)
    usable = usable_gb(gpu, a, a.memory["headroom"].value)
    return Estimate(device / GB, reserved / GB, allocated / GB, usable, context / GB)
