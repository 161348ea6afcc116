"""Provides the memory model checked against benchmarks/memory_validation.csv: fit verdicts, GB error, longest sequence."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.errors import AdvisorError
from advisor.inputs import RunConfig, Workload
from advisor.job import resolve_job
from advisor.layout import Layout
from advisor.memory import Memory, TrainingMemoryModel

CSV_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "memory_validation.csv"
GIB = 1024**3 / 1e9
# Stacks the CSV names that the memory model knows under another name: torchtune's recipes use a chunked
# output loss as torchtitan does; NeMo trains with Megatron-Core.
STACK_OF = {"torchtune": "torchtitan", "nemo": "megatron"}
GENERIC_GPU = "h100-sxm"  # a GPU with FlashAttention, its memory replaced by the row's budget
UNKNOWN_RECOMPUTE = ("none", "full")
UNKNOWN_OPTIMIZER = ("adamw", "paged-adamw-8bit")
SEQ_FLOOR, SEQ_CEIL = 128, 1 << 22


@dataclass(frozen=True)
class Check:
    """One CSV row against the model: predicted range (GB), verdict, and what was measured."""

    source: str
    label: str
    kind: str
    outcome: str
    low_gb: float
    high_gb: float
    usable_gb: float
    measured_gb: float | None
    """The measured peak on the model's footing (CUDA context added where the source left it out)."""
    predicted_fits: bool
    measured_seq: int | None = None
    predicted_seq: int | None = None
    fits_no_headroom: bool = False
    """The verdict with no headroom: tells the memory model's misses from the headroom's."""

    @property
    def agrees(self) -> bool:
        """Whether the predicted verdict is the published one."""
        return self.predicted_fits == (self.outcome == "fits")

    @property
    def gb_error(self) -> float | None:
        """Distance of the measured peak from the predicted range (0 inside it), GB."""
        if self.measured_gb is None:
            return None
        return max(self.low_gb - self.measured_gb, self.measured_gb - self.high_gb, 0.0)

    @property
    def mid_error(self) -> float | None:
        """Midpoint of the range minus the measured peak, GB."""
        return None if self.measured_gb is None else (self.low_gb + self.high_gb) / 2 - self.measured_gb

    @property
    def seq_error(self) -> float | None:
        """Predicted / measured longest sequence - 1."""
        if not self.measured_seq or self.predicted_seq is None:
            return None
        return self.predicted_seq / self.measured_seq - 1


def read_rows(path: Path = CSV_PATH) -> list[dict[str, str]]:
    """The CSV's rows as strings (benchmarks/memory_validation.py checks them in full)."""
    with path.open(newline="", encoding="utf-8") as handle:
        return [{k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(handle)]


def _num(row: dict[str, str], key: str, default: int | None = None) -> int | None:
    return int(row[key]) if row.get(key) else default


def _gpu(knowledge: Knowledge, row: dict[str, str]) -> Gpu:
    gpu = knowledge.gpu(row["gpu"] or GENERIC_GPU)
    if row["gpu_memory_gb"]:
        gpu = replace(gpu, memory_gb=float(row["gpu_memory_gb"]))
    return gpu


def _measured_gb(row: dict[str, str]) -> float | None:
    if not row["measured_peak"]:
        return None
    value = float(row["measured_peak"]) * (GIB if row["unit"] == "GiB" else 1.0)
    if "CUDA context of" in row["memory_kind"]:  # our own rows: torch's reserved memory, context measured apart
        context = row["memory_kind"].split("CUDA context of", 1)[1].split("GB", 1)[0]
        value += float(context)
    return value


def _micro_batch(row: dict[str, str]) -> int:
    if row["micro_batch"]:
        return int(row["micro_batch"])
    # Pipeline rows give only the local batch; torchtitan's pipeline micro-batch defaults to 1 sequence.
    return 1 if int(row["pp"]) > 1 else int(row["local_batch"] or 1)


def _workload(row: dict[str, str], seq_len: int, recompute: str, optimizer: str) -> Workload:
    # torchtune's recipes train in bf16 without an fp32 copy (dtype: bf16); other stacks keep one by default.
    master = {"yes": True, "no": False}.get(row["master_weights"], False if row["stack"] == "torchtune" else None)
    zero = int(row["zero_stage"])
    dp = int(row["dp"])
    config = RunConfig(tp=int(row["tp"]), pp=int(row["pp"]), cp=int(row["cp"]), dp=dp,
                       zero=zero if dp * int(row["cp"]) > 1 else 0, recompute=recompute,
                       stack=STACK_OF.get(row["stack"], row["stack"]), offload=row["offload"] or "none",
                       master_weights=master)  # type: ignore[arg-type]  # CSV strings, checked by the loader
    return Workload(model=row["model"], kind=row["workload"], precision=row["precision"],  # type: ignore[arg-type]
                    seq_len=seq_len, batch_size=_micro_batch(row), optimizer=optimizer,  # type: ignore[arg-type]
                    lora_rank=_num(row, "lora_rank"), config=config)


def _layout(row: dict[str, str], precision: str, recompute: str) -> Layout:
    count, dp, cp = int(row["gpu_count"]), int(row["dp"]), int(row["cp"])
    zero = int(row["zero_stage"]) if dp * cp > 1 else 0
    sharding = {0: "ddp" if dp > 1 else "none", 1: "zero1", 2: "zero2", 3: "zero3"}[zero]
    return Layout(count=count, nodes=max(1, count // 8), node_size=min(count, 8), precision=precision,
                  tp=int(row["tp"]), pp=int(row["pp"]), dp=dp, cp=cp, sharding=sharding, recompute=recompute,
                  micro_batch=_micro_batch(row))


def _variants(row: dict[str, str]) -> list[tuple[str, str]]:
    """(recompute, optimizer) settings the row allows: an unstated one spans its extremes (a range, not a guess)."""
    recomputes = (row["recompute"],) if row["recompute"] else UNKNOWN_RECOMPUTE
    optimizers = (row["optimizer"],) if row["optimizer"] else UNKNOWN_OPTIMIZER
    return [(r, o) for r in recomputes for o in optimizers]


def row_memory(knowledge: Knowledge, row: dict[str, str], seq_len: int | None = None) -> tuple[float, float, Memory]:
    """Predicted per-GPU (low, high) GB of a row's configuration over its unstated settings, and one breakdown."""
    gpu = _gpu(knowledge, row)
    usable = gpu.memory_gb * (1 - knowledge.assumptions.memory.headroom.value)
    lows, highs, last = [], [], None
    for recompute, optimizer in _variants(row):
        job = resolve_job(knowledge, _workload(row, seq_len or int(row["seq_len"]), recompute, optimizer),
                          need_data=False)
        precision = row["precision"]
        mem = TrainingMemoryModel(job, gpu, precision, knowledge.assumptions).components(
            _layout(row, precision, recompute), usable)
        lows.append(mem.low_gb)
        highs.append(mem.high_gb)
        last = mem if last is None or mem.high_gb > last.high_gb else last
    assert last is not None
    return min(lows), max(highs), last


def _leanest_high(knowledge: Knowledge, row: dict[str, str], seq_len: int) -> float:
    gpu = _gpu(knowledge, row)
    usable = gpu.memory_gb * (1 - knowledge.assumptions.memory.headroom.value)
    best = float("inf")
    for recompute, optimizer in _variants(row):
        job = resolve_job(knowledge, _workload(row, seq_len, recompute, optimizer), need_data=False)
        mem = TrainingMemoryModel(job, gpu, row["precision"], knowledge.assumptions).components(
            _layout(row, row["precision"], recompute), usable)
        best = min(best, mem.high_gb)
    return best


def longest_seq(knowledge: Knowledge, row: dict[str, str]) -> int:
    """The longest sequence (to 1%) the model says fits the row's budget at the default headroom; 0 if none."""
    usable = _gpu(knowledge, row).memory_gb * (1 - knowledge.assumptions.memory.headroom.value)
    fits = lambda s: _leanest_high(knowledge, row, s) <= usable  # noqa: E731
    lo, hi = SEQ_FLOOR, SEQ_CEIL
    if not fits(lo):
        return 0
    if fits(hi):
        return hi
    while hi / lo > 1.01:
        mid = int((lo * hi) ** 0.5)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def check_row(knowledge: Knowledge, row: dict[str, str]) -> Check:
    """One row against the model."""
    low, high, mem = row_memory(knowledge, row)
    label = (f"{row['model']} {row['workload']} {row['gpu'] or row['gpu_memory_gb'] + 'GB'} x{row['gpu_count']} "
             f"tp{row['tp']} pp{row['pp']} cp{row['cp']} z{row['zero_stage']} {row['recompute'] or '?'} "
             f"mb{_micro_batch(row)} s{row['seq_len']} {row['stack']}")
    leanest = _leanest_high(knowledge, row, int(row["seq_len"]))
    seq = (int(row["seq_len"]), longest_seq(knowledge, row)) if row["kind"] == "max_seq_len" else (None, None)
    return Check(row["source"], label, row["kind"], row["outcome"], low, high, mem.usable_gb, _measured_gb(row),
                 leanest <= mem.usable_gb, *seq, fits_no_headroom=leanest <= mem.capacity_gb)


def check_all(knowledge: Knowledge, path: Path = CSV_PATH) -> list[Check]:
    """Every row of the CSV against the model."""
    return [check_row(knowledge, row) for row in read_rows(path)]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _source_line(source: str, checks: list[Check]) -> str:
    runs = [c for c in checks if c.kind == "run"]
    agree = sum(c.agrees for c in runs)
    errs = [c.gb_error for c in runs if c.gb_error is not None]
    inside = sum(e == 0 for e in errs)
    seqs = [abs(c.seq_error) for c in checks if c.seq_error is not None]
    verdict = f"{agree}/{len(runs)}" if runs else "-"
    gb = f"{statistics.median(errs):5.1f} {_pct(errs, 0.9):5.1f} {inside:>2}/{len(errs):<2}" if errs else \
        f"{'-':>5} {'-':>5} {'-':>5}"
    seq = f"{statistics.median(seqs):6.0%} {sum(s <= 0.15 for s in seqs):>2}/{len(seqs)}" if seqs else "     -"
    return f"  {source:<17} {verdict:>7}  {gb}  {seq}"


def summary_lines(checks: list[Check]) -> list[str]:
    """Agreement, GB error and longest-sequence error, overall and by source (the held-out view)."""
    by_source: dict[str, list[Check]] = defaultdict(list)
    for c in checks:
        by_source[c.source].append(c)
    lines = [f"  {'source':<17} {'verdict':>7}  {'GB err: median P90 in-range':<27}  longest seq: |err| <=15%"]
    lines += [_source_line(s, group) for s, group in sorted(by_source.items())]
    lines.append(_source_line("all", checks))
    runs = [c for c in checks if c.kind == "run"]
    agree = sum(c.agrees for c in runs) / max(len(runs), 1)
    seqs = [abs(c.seq_error) for c in checks if c.seq_error is not None]
    within = sum(s <= 0.15 for s in seqs) / max(len(seqs), 1)
    bare = sum(c.fits_no_headroom == (c.outcome == "fits") for c in runs) / max(len(runs), 1)
    lines.append(f"  goals: fit verdicts {agree:.0%} right (goal >= 90%); longest sequence within 15% on "
                 f"{within:.0%} of rows (goal: all); without the headroom {bare:.0%} of verdicts right")
    return lines


def detail_lines(checks: list[Check]) -> list[str]:
    """One line per row: the range, the measurement and the verdict."""
    out = []
    for c in checks:
        measured = f"{c.measured_gb:6.1f}" if c.measured_gb is not None else "     -"
        seq = f" seq {c.predicted_seq}/{c.measured_seq} ({c.seq_error:+.0%})" if c.seq_error is not None else ""
        mark = "ok " if c.agrees or c.kind != "run" else "XX "
        out.append(f"  {mark}{c.label:<72} {c.low_gb:6.1f}-{c.high_gb:6.1f} / {c.usable_gb:5.1f} "
                   f"measured {measured} {c.outcome}{seq}")
    return out


def memory_validation_lines(knowledge: Knowledge | None = None, *, detail: bool = False) -> list[str]:
    """The memory-validation section of `model evaluate`; one line when the CSV is not installed."""
    if not CSV_PATH.is_file():
        return ["memory validation: benchmarks/memory_validation.csv is not in this installation "
                "(run from a source checkout)"]
    if knowledge is None:
        from advisor.catalog.loader import load_knowledge

        knowledge = load_knowledge()
    try:
        checks = check_all(knowledge)
    except (AdvisorError, ValueError, KeyError) as exc:
        return [f"memory validation: cannot read {CSV_PATH.name}: {str(exc).splitlines()[0]}"]
    head = [f"Memory model against {len(checks)} published or measured runs "
            f"(benchmarks/memory_validation.csv, default headroom):"]
    return head + (detail_lines(checks) if detail else []) + summary_lines(checks)
