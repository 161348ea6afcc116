"""Loads and checks benchmarks/memory_validation.csv (published peak memory); prints a summary per source.

Run from the repository root: `.venv/bin/python benchmarks/memory_validation.py [--detail] [--band]`. It exits
1 when a row is malformed, then prints the memory model against them (advisor/learned/memory/validation.py:
verdicts on the central estimate, each source judged with a band fitted on the other sources' peaks;
peak errors; the longest sequence that fits), by source; --detail adds one line per row, --band the error band
fitted on every peak (what knowledge/assumptions.toml ships as memory.central_error and memory.verdict_band).
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

CSV_PATH = Path(__file__).resolve().parent / "memory_validation.csv"
WORKLOADS = {"pretrain", "finetune", "lora", "qlora", "inference"}
PRECISIONS = {"fp32", "tf32", "fp16", "bf16", "fp8"}
RECOMPUTE = {"", "none", "selective", "full"}
OPTIMIZERS = {"", "adamw", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd", "lion", "adafactor"}
SETTABLE = {
    "model_code",
    "loss",
    "master_weights",
    "peft_fp32_adapters",
    "offload_checkpoints",
    "fp32_main_grads",
    "optimizer_in_backward",
    "kbit_fp32_tables",
}
STACKS = {
    "axolotl",
    "llama-factory",
    "megatron",
    "torchtitan",
    "deepspeed",
    "hf",
    "composer",
    "unsloth",
    "torchtune",
    "nemo",
    "vllm",
    "litgpt",
    "pytorch",
    "trl",
}
OFFLOAD = {"none", "optimizer", "params"}
MASTER = {"", "yes", "no"}
UNITS = {"", "GB", "GiB"}
OUTCOMES = {"fits", "oom"}
KINDS = {"run", "max_seq_len"}
SHAPE = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "params")
GIB = 1024**3 / 1e9


@dataclass(frozen=True)
class MemoryRow:
    """One published measurement: a configuration, its outcome and (where measured) its peak memory per
    GPU."""

    source: str
    source_ref: str
    model: str
    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    ffn: int | None
    vocab: int | None
    params: float | None
    gated: str
    """yes / no for a row given by its shape (a gated, SwiGLU-style FFN or a plain one); empty with a model
    id."""
    workload: str
    gpu: str
    gpu_memory_gb: float | None
    gpu_count: int
    precision: str
    tp: int
    pp: int
    cp: int
    dp: int
    zero_stage: int
    recompute: str
    local_batch: int | None
    micro_batch: int | None
    seq_len: int
    optimizer: str
    stack: str
    lora_rank: int | None
    offload: str
    master_weights: str
    """yes / no where the source says whether an fp32 master copy was kept; empty when it does not."""
    settings: str
    """What the source says it ran differently from its stack's defaults, as `trait=value;...` over the memory
    traits of knowledge/assumptions.toml [stack.*] (model_code, loss, master_weights, peft_fp32_adapters,
    offload_checkpoints, fp32_main_grads, optimizer_in_backward, kbit_fp32_tables); empty for the stack's
    defaults."""
    measured_peak: float | None
    unit: str
    memory_kind: str
    outcome: str
    kind: str
    note: str

    @property
    def measured_peak_gb(self) -> float | None:
        """The measured peak in GB (1e9 bytes), whatever unit the source wrote."""
        if self.measured_peak is None:
            return None
        return self.measured_peak * (GIB if self.unit == "GiB" else 1.0)


_INTS = {f.name for f in fields(MemoryRow) if "int" in str(f.type)}
_FLOATS = {f.name for f in fields(MemoryRow) if "float" in str(f.type)}


def _convert(name: str, text: str, line: int) -> Any:
    text = text.strip()
    if name not in _INTS | _FLOATS:
        return text
    if text == "":
        return None
    try:
        return int(text) if name in _INTS else float(text)
    except ValueError:
        raise ValueError(f"line {line}: {name} {text!r} is not a number") from None


def load_rows(path: Path = CSV_PATH) -> list[MemoryRow]:
    """Read the CSV into typed rows; a column set other than MemoryRow's or a non-number is a ValueError."""
    names = [f.name for f in fields(MemoryRow)]
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != names:
            raise ValueError(f"{path.name}: columns {reader.fieldnames} differ from {names}")
        return [
            MemoryRow(**{k: _convert(k, v, i) for k, v in raw.items()}) for i, raw in enumerate(reader, 2)
        ]


def _enum_problems(row: MemoryRow) -> list[str]:
    checks = {
        "workload": WORKLOADS,
        "precision": PRECISIONS,
        "recompute": RECOMPUTE,
        "optimizer": OPTIMIZERS,
        "stack": STACKS,
        "offload": OFFLOAD,
        "master_weights": MASTER,
        "unit": UNITS,
        "outcome": OUTCOMES,
        "kind": KINDS,
    }
    return [
        f"{name} {getattr(row, name)!r} not in {sorted(allowed)}"
        for name, allowed in checks.items()
        if getattr(row, name) not in allowed
    ]


def _layout_problems(row: MemoryRow) -> list[str]:
    problems = []
    if min(row.tp, row.pp, row.cp, row.dp, row.gpu_count, row.seq_len) < 1:
        problems.append("tp, pp, cp, dp, gpu_count and seq_len must be >= 1")
    elif row.tp * row.pp * row.cp * row.dp != row.gpu_count:
        problems.append(f"tp*pp*cp*dp = {row.tp * row.pp * row.cp * row.dp} != gpu_count {row.gpu_count}")
    if row.zero_stage not in (0, 1, 2, 3):
        problems.append(f"zero_stage {row.zero_stage} not in 0..3")
    if (row.measured_peak is None) != (row.unit == ""):
        problems.append("measured_peak and unit go together")
    if row.measured_peak is not None and row.outcome != "fits":
        problems.append("a measured peak belongs to a run that fit")
    if row.kind == "max_seq_len" and row.gpu_memory_gb is None:
        problems.append("a max_seq_len row needs gpu_memory_gb (the budget it fit in)")
    if row.workload in ("lora", "qlora") and row.lora_rank is not None and row.lora_rank < 1:
        problems.append("lora_rank must be >= 1")
    for item in filter(None, row.settings.split(";")):
        name, eq, value = item.partition("=")
        free = name in ("loss", "model_code")
        if not eq or name not in SETTABLE or (not free and value not in ("true", "false")):
            problems.append(f"settings {item!r}: trait=value with a trait of {sorted(SETTABLE)}")
    return problems


def _catalogue_problems(row: MemoryRow, gpu_ids: set[str], model_ids: set[str]) -> list[str]:
    problems = []
    if row.gpu and row.gpu not in gpu_ids:
        problems.append(f"unknown gpu {row.gpu!r}")
    if not row.gpu and row.gpu_memory_gb is None:
        problems.append("no gpu id: gpu_memory_gb must give the memory")
    if row.model and row.model not in model_ids:
        problems.append(f"unknown model {row.model!r}")
    if not row.model and any(getattr(row, name) is None for name in SHAPE):
        problems.append(f"no catalogue model: the shape {', '.join(SHAPE)} must be complete")
    if row.gated not in (("yes", "no") if not row.model else ("",)):
        problems.append(f"gated {row.gated!r}: yes or no for a shape row, empty for a catalogue model")
    return problems


def row_problems(row: MemoryRow, gpu_ids: set[str], model_ids: set[str]) -> list[str]:
    """Everything wrong with one row (empty when it is usable)."""
    basics = [f"{name} is empty" for name in ("source", "source_ref", "note") if not getattr(row, name)]
    own = row.source_ref.startswith(
        "this repository: benchmarks/device/"
    )  # our own measurement, data committed
    if row.source_ref and "@" not in row.source_ref and "arXiv" not in row.source_ref and not own:
        basics.append("source_ref must cite owner/repo@commit:path, a paper or this repository's measurement")
    return basics + _enum_problems(row) + _layout_problems(row) + _catalogue_problems(row, gpu_ids, model_ids)


def summary(rows: list[MemoryRow]) -> list[str]:
    """One line per source: rows, measured peaks, OOM outcomes, longest-sequence rows, GPUs and models."""
    by_source: dict[str, list[MemoryRow]] = defaultdict(list)
    for row in rows:
        by_source[row.source].append(row)
    lines = [f"{'source':<16} {'rows':>4} {'peak GB':>7} {'oom':>4} {'max-seq':>7}  gpus / models"]
    for source, group in sorted(by_source.items()):
        measured = sum(r.measured_peak is not None for r in group)
        ooms = sum(r.outcome == "oom" for r in group)
        longest = sum(r.kind == "max_seq_len" for r in group)
        gpus = sorted({r.gpu or f"{r.gpu_memory_gb:g}GB" for r in group})
        models = sorted({r.model or "shape" for r in group})
        lines.append(
            f"{source:<16} {len(group):>4} {measured:>7} {ooms:>4} {longest:>7}  "
            f"{', '.join(gpus)} / {', '.join(models)}"
        )
    lines.append(
        f"{'total':<16} {len(rows):>4} {sum(r.measured_peak is not None for r in rows):>7} "
        f"{sum(r.outcome == 'oom' for r in rows):>4} {sum(r.kind == 'max_seq_len' for r in rows):>7}"
    )
    return lines


def main() -> int:
    sys.path.insert(0, str(CSV_PATH.parents[1]))
    from advisor.catalog.loader import load_knowledge

    knowledge = load_knowledge()
    gpu_ids, model_ids = {g.id for g in knowledge.gpus}, {m.id for m in knowledge.models}
    rows = load_rows()
    bad = [(i, p) for i, row in enumerate(rows, 2) for p in row_problems(row, gpu_ids, model_ids)]
    for line, problem in bad:
        print(f"memory_validation.csv line {line}: {problem}", file=sys.stderr)
    print("\n".join(summary(rows)))
    from advisor.learned.memory.validation import band_lines, memory_validation_lines

    print()
    print("\n".join(memory_validation_lines(knowledge, detail="--detail" in sys.argv)))
    if "--band" in sys.argv:  # the band to ship in assumptions.toml, fitted on every source's peaks
        print("\n".join(band_lines(knowledge)))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
