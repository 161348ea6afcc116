"""Provides Run: one measured training run with its full configuration, read from either training table."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.catalog.loader import Knowledge

if TYPE_CHECKING:  # the table's schema (pydantic) is imported where rows are read, not where runs are priced
    from advisor.catalog.benchmarks import BenchmarkRow

LLM_TABLE = "llm_benchmarks.csv"
# Training precisions of the published tables as the core names them: MXFP8 runs at the FP8 peak of Blackwell
# (block scaling changes the recipe, not the tensor-core rate); NVFP4 training has no training precision in
# the core yet, so those rows are left out with that reason.
PRECISION = {"fp8": "fp8", "mxfp8": "fp8", "bf16": "bf16", "fp16": "fp16", "tf32": "tf32", "fp32": "fp32"}
SHARDING_ZERO = {
    "": None,
    "ddp": 0,
    "zero1": 1,
    "zero2": 2,
    "zero3": 3,
    "fsdp-full": 3,
    "fsdp-grad-op": 2,
    "hsdp": 3,
}
TASK_KIND = {"pretrain": "pretrain", "sft": "finetune", "finetune": "finetune"}
# The kind of source a run comes from: a vendor's tuned benchmark table, a paper, an end-to-end training
# report, or an independent team's repository or blog (llm_benchmarks.csv's family column). Rows of a table
# without the column take their source's kind from here; a user's own runs count as independent.
FAMILIES = ("vendor", "paper", "report", "independent")
VENDOR_ORIGINS = (
    "mosaicml/llm-foundry",
    "lambdal/deeplearning-benchmark",
    "NVIDIA/NeMo",
    "NVIDIA-NeMo/Megatron-Bridge",
    "pytorch/torchtitan",
)
_MONTH = re.compile(r"\b(20\d\d)-(0[1-9]|1[0-2])\b")
_CONTAINER = re.compile(r"(?:NeMo|container)\D{0,3}(\d\d)\.(0[1-9]|1[0-2])\b")
_YEAR = re.compile(r"\b(20[12]\d)\b")


@dataclass(frozen=True, slots=True, repr=False)
class Run:
    """A measured run as the efficiency model reads it; None = not stated by the source."""

    workload: str
    gpu: str
    count: int
    nodes: int
    precision: str
    throughput: float
    """Whole-system throughput in the workload's unit (tokens/s for LLMs)."""
    unit: str
    stack: str
    source: str
    """owner/repo@commit:path, or user:<file>."""
    kind: str = "pretrain"
    seq_len: int = 0
    micro_batch: int | None = None
    global_batch: int | None = None
    grad_accum: int | None = None
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    virtual: int = 1
    zero: int | None = None
    shard_group: int | None = None
    recompute: str | None = None
    offload: str | None = None
    """none | optimizer | params, as the source states it (None: not stated)."""
    software: str = ""
    row_ref: str = ""
    family: str = ""
    """vendor, paper, report or independent ('' = by its source: VENDOR_ORIGINS, else independent)."""
    spec: Any = None
    """A model outside the catalogue (advisor.catalog.models.ModelSpec, from its shape): workload is then its
    label (a development set's run, development.py); None for every knowledge/ run."""
    params: float | None = None
    """A custom dense transformer of this many parameters (a run that states only the count), else None."""
    fabric: str = ""
    """The network between servers as the source states it (a knowledge/assumptions.toml [fabric.*] key;
    '' = not stated: the GPU's usual fabric)."""

    @property
    def source_family(self) -> str:
        """The kind of source of this run."""
        if self.family in FAMILIES:
            return self.family
        return "vendor" if self.origin in VENDOR_ORIGINS else "independent"

    @property
    def month(self) -> str | None:
        """When the run's software dates from ('YYYY-MM'), read from its software, source and reference; a
        year alone reads as its middle; None when none is stated (read as today's software)."""
        for text in (self.software, self.source, self.row_ref):
            if m := _MONTH.search(text):
                return f"{m.group(1)}-{m.group(2)}"
            if m := _CONTAINER.search(text):
                return f"20{m.group(1)}-{m.group(2)}"
            if m := _YEAR.search(text):
                return f"{m.group(1)}-06"
        return None

    @property
    def origin(self) -> str:
        """The source a held-out-source fold removes: the repository (every commit of it), or the user
        file."""
        return self.source.split("@")[0] if "@" in self.source else self.source.split(" ")[0]

    @property
    def key(self) -> str:
        """A stable identity (for weights and de-duplication)."""
        return f"{self.source}|{self.row_ref}|{self.workload}|{self.gpu}|{self.count}|{self.precision}"


# A stated network: "<N> Gb/s ... per GPU" or "<N> Gbps node-node" (a server of 8 GPUs), and its kind.
_PER_GPU = re.compile(r"(\d+)\s*Gb(?:ps|/s)\b[^,;()]{0,20}?\bper GPU", re.IGNORECASE)
_PER_NODE = re.compile(r"(\d+)\s*Gb(?:ps|/s)\s*(?:node-node|per node|a node)", re.IGNORECASE)
# (Gb/s per GPU, RoCE) -> the catalogue's fabric of that rate (knowledge/assumptions.toml [fabric.*]).
FABRIC_OF_RATE = {
    (400, False): "ib-ndr",
    (400, True): "ib-ndr",
    (200, False): "ib-hdr",
    (200, True): "roce-200",
    (50, False): "rdma-4x100",
    (50, True): "rdma-4x100",
}


def fabric_of_text(*texts: str) -> str:
    """The fabric key a run's own text states ('' when it states none, or a rate the catalogue lacks):
    MosaicML's "1600 Gbps node-node interconnect (RoCE)" is roce-200, torchtitan's "400 Gb/s RDMA per GPU"
    ib-ndr (the same 50 GB/s a GPU)."""
    text = " ".join(texts)
    roce = "roce" in text.lower()
    if m := _PER_GPU.search(text):
        return FABRIC_OF_RATE.get((int(m.group(1)), roce), "")
    if m := _PER_NODE.search(text):
        return FABRIC_OF_RATE.get((int(m.group(1)) // 8, roce), "")
    return ""


# The attention kernel a run's software states. PyTorch's SDPA on Hopper and Blackwell (compute capability
# 9.x, 10.x) puts cuDNN's fused attention before its FlashAttention-2 backend when the runtime cuDNN is newer
# than 9.15.0 (`check_prefer_cudnn_attention`,
# pytorch/pytorch@001f694aef6f:aten/src/ATen/native/transformers/cuda/sdp_utils.cpp): the CUDA 13 wheels
# from torch 2.11 bundle one; CUDA 12.x wheels ship an older cuDNN (the comment there) and keep
# FlashAttention-2. Torch 2.5.0 also preferred cuDNN on H100 (its release notes: "enabled by default for all
# users of SDPA on H100 or newer GPUs"), withdrawn in 2.5.1 (pytorch/pytorch#138522).
_FA = re.compile(r"(?:FlashAttention|flash[-_ ]?attn|flash_attention)[-_ ]?v?([234])\b", re.IGNORECASE)
_SDPA = re.compile(r"\bsdpa\b", re.IGNORECASE)
_TORCH = re.compile(r"\btorch[ =]?(\d+)\.(\d+)\.(\d+)[^,;]*?(?:cu(\d\d)\d)?(?=[,;)\s]|$)", re.IGNORECASE)
_FA_KERNEL = {"2": "fa2", "3": "fa3"}
CUDNN_SDPA_FROM = (2, 11)
CUDNN_SDPA_CC = (9.0, 11.0)


def stated_attention(software: str, compute_capability: float) -> str | None:
    """The attention kernel a run's software states (knowledge/operations' kernel names), or None when it
    states none the tables tell apart (FlashAttention-4: Blackwell's rows hold one kernel)."""
    if m := _FA.search(software):
        return _FA_KERNEL.get(m.group(1))
    if not _SDPA.search(software):
        return None
    t = _TORCH.search(software)
    if t is None:
        return None
    version, cuda = (int(t.group(1)), int(t.group(2)), int(t.group(3))), t.group(4)
    hopper_on = CUDNN_SDPA_CC[0] <= compute_capability < CUDNN_SDPA_CC[1]
    new_cudnn = version[:2] >= CUDNN_SDPA_FROM and (cuda is None or int(cuda) >= 13)
    return "cudnn" if hopper_on and (new_cudnn or version == (2, 5, 0)) else "fa2"


def stack_of_row(row: BenchmarkRow) -> str:
    """The harness of a benchmarks.csv row: Composer for MosaicML's runs, NVIDIA's NGC PyTorch examples for
    Lambda's (its harness runs DeepLearningExamples in NGC containers); a user's row may name its own."""
    if row.source.startswith("mosaicml/"):
        return "composer"
    if row.source.startswith("lambdal/"):
        return "ngc-pytorch"
    return "pytorch"


def run_of_row(row: BenchmarkRow, stack: str | None = None) -> Run:
    """A benchmarks.csv row as a run (data parallel only: the table has no model-parallel columns)."""
    return Run(
        workload=row.workload,
        gpu=row.gpu,
        count=row.count,
        nodes=row.nodes,
        precision=row.precision,
        throughput=row.throughput,
        unit=row.unit,
        stack=stack or stack_of_row(row),
        source=row.source,
        seq_len=row.seq_len,
        micro_batch=int(row.batch_per_gpu) if row.batch_per_gpu else None,
        grad_accum=row.grad_accum,
        zero=row.zero_stage if row.count > 1 else None,
        recompute=row.recompute,
        software=row.software,
        row_ref=row.row_ref,
        fabric=fabric_of_text(row.software, row.row_ref, row.note),
    )


def _int(value: str) -> int | None:
    return int(float(value)) if value.strip() else None


def _zero_of(r: dict[str, str]) -> int | None:
    """The ZeRO stage a record's run trained with. NeMo's and Megatron-Bridge's recipes train with
    Megatron-Core's distributed optimizer (ZeRO-1: master weights and optimizer states sharded over the
    data-parallel ranks): use_distributed_optimizer=True in NVIDIA-NeMo/Megatron-Bridge@0d7a394c3a1c:
    src/megatron/bridge/recipes/utils/optimizer_utils.py and NVIDIA/NeMo@e87aa6990581:
    nemo/collections/llm/recipes/optim/adam.py (distributed_fused_adam_with_cosine_annealing). Their
    performance tables give the data-parallel degree, not the optimizer, so a row of theirs read as plain
    DDP (or unstated) trained with it; rebuilt without it, their 8B-405B runs need more memory than the GPU
    has."""
    zero = SHARDING_ZERO.get(r["sharding"])
    if not zero and r["stack"] == "megatron" and "NeMo" in r["software"]:
        return 1
    return zero


def run_of_llm_record(r: dict[str, str]) -> tuple[Run | None, str]:
    """A llm_benchmarks.csv record as a run, or None and why it cannot train."""
    if not r["count"]:
        # End-to-end reports (model cards) may give GPU-hours and tokens without the GPU count.
        return None, "GPU count not stated (an end-to-end report row)"
    precision = PRECISION.get(r["precision"])
    if precision is None:
        return None, f"precision {r['precision']} has no training peak in the core"
    kind = TASK_KIND.get(r["task"])
    if kind is None:
        return None, f"task {r['task']}: the learned model covers full training (LoRA scales by its prior)"
    count = int(r["count"])
    total = float(r["tokens_per_s"]) if r["tokens_per_s"] else float(r["tokens_per_s_per_gpu"]) * count
    hsdp = r["sharding"] == "hsdp"
    return Run(
        workload=r["model"],
        gpu=r["gpu"],
        count=count,
        nodes=int(r["nodes"]),
        precision=precision,
        throughput=total,
        unit="tokens/s",
        stack=r["stack"],
        source=r["source"],
        kind=kind,
        seq_len=int(r["seq_len"]),
        micro_batch=_int(r["micro_batch"]),
        global_batch=_int(r["global_batch"]),
        grad_accum=_int(r["grad_accum"]),
        tp=_int(r["tp"]) or 1,
        pp=_int(r["pp"]) or 1,
        cp=_int(r["cp"]) or 1,
        ep=_int(r["ep"]) or 1,
        virtual=_int(r["vp"]) or 1,
        zero=_zero_of(r),
        shard_group=(count // int(r["nodes"]) if hsdp else None),  # HSDP shards within a node
        recompute=r["recompute"] or None,
        offload=r.get("offload") or None,
        software=r["software"],
        row_ref=r["row_ref"],
        family=r.get("family", ""),
        fabric=fabric_of_text(r["source_gpu"], r["table"], r["note"], r["software"]),
    ), ""


def _rack_scale(knowledge: Knowledge, gpu_id: str) -> bool:
    """Whether a GPU's NVLink domain reaches beyond its server (GB200/GB300 NVL72)."""
    gpu = next((g for g in knowledge.gpus if g.id == gpu_id), None)
    return gpu is not None and gpu.nvlink_domain > gpu.gpus_per_node


def read_llm_runs(knowledge: Knowledge) -> tuple[list[Run], list[tuple[str, str]]]:
    """The usable runs of knowledge/llm_benchmarks.csv, and (row ref, why) for the others."""
    path = knowledge.root.joinpath(LLM_TABLE)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    runs, skipped = [], []
    for r in csv.DictReader(io.StringIO(text)):
        run, why = run_of_llm_record(r)
        if run is not None and _rack_scale(knowledge, run.gpu):
            # The speed of light treats traffic between the trays of an NVL72 rack as network traffic, not
            # NVLink: its label for these runs would be wrong, so they wait until the network model has racks.
            why = f"{run.gpu}: NVLink spans the rack, which the speed-of-light model does not yet model"
            run = None
        if run is None:
            skipped.append((f"{r['source'].split('@')[0]} {r['row_ref']}", why))
        else:
            runs.append(run)
    return runs, skipped
