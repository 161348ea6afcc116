"""Provides the memory model checked against benchmarks/memory_validation.csv: fit, GB error, max sequence."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from advisor.catalog.gpus import Gpu
from advisor.catalog.hf_config import spec_from_shape
from advisor.catalog.loader import Knowledge
from advisor.catalog.models import ModelSpec
from advisor.job.inputs import RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.physics.memory import Memory, TrainingMemoryModel
from advisor.question.errors import AdvisorError

CSV_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_validation.csv"
GIB = 1024**3 / 1e9
# Stacks the CSV names that the memory model knows under another name: torchtune's recipes use a chunked
# output loss as torchtitan does; NeMo trains with Megatron-Core; TRL's trainers are the Hugging Face
# Trainer; LitGPT and plain PyTorch scripts (NVIDIA's DeepLearningExamples) train eagerly with a
# full-vocabulary loss, as Hugging Face does.
STACK_OF = {"torchtune": "torchtitan", "nemo": "megatron", "trl": "hf", "litgpt": "hf", "pytorch": "hf"}
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
    nominal_gb: float | None = None
    surely_oom: bool = False
    """Even the lower estimate exceeds the whole memory: 'does not fit' in the three-way verdict."""
    seq_strict: int | None = None
    seq_loose: int | None = None
    """The longest sequence by the upper estimate within the headroom, and by the lower one within memory."""

    @property
    def verdict3(self) -> str:
        """Three-way verdict: fits (upper estimate within the headroom), does not fit (lower estimate over the
        whole memory), may not fit (between)."""
        return "fits" if self.predicted_fits else ("does not fit" if self.surely_oom else "may not fit")

    @property
    def agrees3(self) -> bool:
        """Whether the published outcome is consistent with the three-way verdict."""
        return self.verdict3 != ("does not fit" if self.outcome == "fits" else "fits")

    @property
    def seq_in_range(self) -> bool:
        """Whether the measured longest sequence lies between the strict and the loose prediction."""
        return bool(
            self.measured_seq
            and self.seq_strict is not None
            and self.seq_loose is not None
            and self.seq_strict <= self.measured_seq <= max(self.seq_loose, self.seq_strict)
        )

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
        """Predicted (nominal) / measured longest sequence - 1."""
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
    if (
        "CUDA context of" in row["memory_kind"]
    ):  # our own rows: torch's reserved memory, context measured apart
        context = row["memory_kind"].split("CUDA context of", 1)[1].split("GB", 1)[0]
        value += float(context)
    return value


def _micro_batch(row: dict[str, str]) -> int:
    if row["micro_batch"]:
        return int(row["micro_batch"])
    # Pipeline rows give only the local batch; torchtitan's pipeline micro-batch defaults to 1 sequence.
    return 1 if int(row["pp"]) > 1 else int(row["local_batch"] or 1)


def _spec(row: dict[str, str]) -> ModelSpec | None:
    """A row without a catalogue model: its shape as a decoder spec carrying the parameter count the row
    states (biases, tied or untied heads and parallel blocks change the count but not the shape)."""
    if row["model"]:
        return None
    dims = [int(row[k]) for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")]
    spec = spec_from_shape(*dims, gated=row["gated"] == "yes", model_id="csv-shape")
    return replace(spec, params=float(row["params"]), active_params=float(row["params"]))


def _label_model(row: dict[str, str]) -> str:
    return row["model"] or f"L{row['layers']}-h{row['hidden']}-a{row['heads']}/{row['kv_heads']}"


def _workload(row: dict[str, str], seq_len: int, recompute: str, optimizer: str) -> Workload:
    # torchtune's recipes train in bf16 without an fp32 copy (dtype: bf16); other stacks keep one by default.
    master = {"yes": True, "no": False}.get(
        row["master_weights"], False if row["stack"] == "torchtune" else None
    )
    zero = int(row["zero_stage"])
    dp = int(row["dp"])
    config = RunConfig(
        tp=int(row["tp"]),
        pp=int(row["pp"]),
        cp=int(row["cp"]),
        dp=dp,
        zero=zero if dp * int(row["cp"]) > 1 else 0,
        recompute=recompute,
        stack=STACK_OF.get(row["stack"], row["stack"]),
        offload=row["offload"] or "none",
        master_weights=master,
    )  # CSV strings, checked by the loader
    return Workload(
        model=row["model"] or None,
        spec=_spec(row),
        kind=row["workload"],
        precision=row["precision"],
        seq_len=seq_len,
        batch_size=_micro_batch(row),
        optimizer=optimizer,
        lora_rank=_num(row, "lora_rank"),
        config=config,
    )


def _layout(row: dict[str, str], precision: str, recompute: str) -> Layout:
    count, dp, cp = int(row["gpu_count"]), int(row["dp"]), int(row["cp"])
    zero = int(row["zero_stage"]) if dp * cp > 1 else 0
    sharding = {0: "ddp" if dp > 1 else "none", 1: "zero1", 2: "zero2", 3: "zero3"}[zero]
    return Layout(
        count=count,
        nodes=max(1, count // 8),
        node_size=min(count, 8),
        precision=precision,
        tp=int(row["tp"]),
        pp=int(row["pp"]),
        dp=dp,
        cp=cp,
        sharding=sharding,
        recompute=recompute,
        micro_batch=_micro_batch(row),
    )


def _variants(row: dict[str, str]) -> list[tuple[str, str]]:
    """(recompute, optimizer) settings a row allows: unstated ones span their extremes (a range, no guess)."""
    recomputes = (row["recompute"],) if row["recompute"] else UNKNOWN_RECOMPUTE
    optimizers = (row["optimizer"],) if row["optimizer"] else UNKNOWN_OPTIMIZER
    return [(r, o) for r in recomputes for o in optimizers]


def _usable(knowledge: Knowledge, gpu: Gpu) -> float:
    return gpu.memory_gb * (1 - knowledge.assumptions.memory.headroom.value)


def _estimates(knowledge: Knowledge, row: dict[str, str], seq_len: int) -> list[tuple[Memory, float]]:
    """(breakdown, nominal GB) for each setting the row allows."""
    gpu = _gpu(knowledge, row)
    out = []
    for recompute, optimizer in _variants(row):
        job = resolve_job(knowledge, _workload(row, seq_len, recompute, optimizer), need_data=False)
        model = TrainingMemoryModel(job, gpu, row["precision"], knowledge.assumptions)
        layout = _layout(row, row["precision"], recompute)
        out.append((model.components(layout, _usable(knowledge, gpu)), model.nominal_bytes(layout) / 1e9))
    return out


def row_memory(
    knowledge: Knowledge, row: dict[str, str], seq_len: int | None = None
) -> tuple[float, float, Memory]:
    """Predicted per-GPU (low, high) GB of a row's config over its unstated settings, and one breakdown."""
    est = _estimates(knowledge, row, seq_len or int(row["seq_len"]))
    widest = max(est, key=lambda e: e[0].high_gb)[0]
    return min(e[0].low_gb for e in est), max(e[0].high_gb for e in est), widest


def _leanest(knowledge: Knowledge, row: dict[str, str], seq_len: int) -> tuple[float, float, float]:
    """(low, nominal, high) GB of the leanest setting the row allows (by its upper estimate)."""
    mem, nominal = min(_estimates(knowledge, row, seq_len), key=lambda e: e[0].high_gb)
    return mem.low_gb, nominal, mem.high_gb


def _bisect(fits: Callable[[int], bool]) -> int:
    lo, hi = SEQ_FLOOR, SEQ_CEIL
    if not fits(lo):
        return 0
    if fits(hi):
        return hi
    while hi / lo > 1.01:
        mid = int((lo * hi) ** 0.5)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def longest_seq(knowledge: Knowledge, row: dict[str, str]) -> tuple[int, int, int]:
    """The longest sequence (to 1%) that fits the row's budget: (strict: the upper estimate within the default
    headroom, nominal: the point estimate within the whole memory, loose: the lower estimate within it)."""
    gpu = _gpu(knowledge, row)
    usable, capacity = _usable(knowledge, gpu), gpu.memory_gb
    strict = _bisect(lambda s: _leanest(knowledge, row, s)[2] <= usable)
    nominal = _bisect(lambda s: _leanest(knowledge, row, s)[1] <= capacity)
    loose = _bisect(lambda s: _leanest(knowledge, row, s)[0] <= capacity)
    return strict, nominal, loose


def check_row(knowledge: Knowledge, row: dict[str, str]) -> Check:
    """One row against the model."""
    low, high, mem = row_memory(knowledge, row)
    label = (
        f"{_label_model(row)} {row['workload']} {row['gpu'] or row['gpu_memory_gb'] + 'GB'} "
        f"x{row['gpu_count']} "
        f"tp{row['tp']} pp{row['pp']} cp{row['cp']} z{row['zero_stage']} {row['recompute'] or '?'} "
        f"mb{_micro_batch(row)} s{row['seq_len']} {row['stack']}"
    )
    lean_low, nominal, lean_high = _leanest(knowledge, row, int(row["seq_len"]))
    seq: tuple[int | None, ...] = (None,) * 4
    if row["kind"] == "max_seq_len":
        seq = (int(row["seq_len"]), *longest_seq(knowledge, row))
    return Check(
        row["source"],
        label,
        row["kind"],
        row["outcome"],
        low,
        high,
        mem.usable_gb,
        _measured_gb(row),
        lean_high <= mem.usable_gb,
        seq[0],
        seq[2],
        fits_no_headroom=lean_high <= mem.capacity_gb,
        nominal_gb=nominal,
        surely_oom=lean_low > mem.capacity_gb,
        seq_strict=seq[1],
        seq_loose=seq[3],
    )


def check_all(knowledge: Knowledge, path: Path = CSV_PATH) -> list[Check]:
    """Every row of the CSV against the model."""
    return [check_row(knowledge, row) for row in read_rows(path)]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _source_line(source: str, checks: list[Check]) -> str:
    runs = [c for c in checks if c.kind == "run"]
    verdict = f"{sum(c.agrees for c in runs)}/{len(runs)}" if runs else "-"
    three = (
        f"{sum(c.agrees3 for c in runs)}/{len(runs)} ({sum(c.verdict3 == 'may not fit' for c in runs)}?)"
        if runs
        else "-"
    )
    errs = [c.gb_error for c in runs if c.gb_error is not None]
    inside = sum(e == 0 for e in errs)
    gb = (
        f"{statistics.median(errs):5.1f} {_pct(errs, 0.9):5.1f} {inside:>2}/{len(errs):<2}"
        if errs
        else f"{'-':>5} {'-':>5} {'-':>5}"
    )
    longest = [c for c in checks if c.seq_error is not None]
    seqs = [abs(c.seq_error) for c in longest if c.seq_error is not None]
    seq = (
        (
            f"{statistics.median(seqs):5.0%} {sum(x <= 0.15 for x in seqs):>2}/{len(seqs):<2} "
            f"{sum(c.seq_in_range for c in longest):>2}/{len(longest)}"
        )
        if seqs
        else "    -"
    )
    return f"  {source:<17} {verdict:>7} {three:>11}  {gb}  {seq}"


def summary_lines(checks: list[Check]) -> list[str]:
    """Agreement, GB error and longest-sequence error, overall and by source (the held-out view)."""
    by_source: dict[str, list[Check]] = defaultdict(list)
    for c in checks:
        by_source[c.source].append(c)
    lines = [
        f"  {'source':<17} {'strict':>7} {'three-way':>11}  {'GB err: median P90 in-range':<27}  "
        "longest seq: |err| <=15% in-range"
    ]
    lines += [_source_line(s, group) for s, group in sorted(by_source.items())]
    lines.append(_source_line("all", checks))
    runs = [c for c in checks if c.kind == "run"]
    agree = sum(c.agrees for c in runs) / max(len(runs), 1)
    agree3 = sum(c.agrees3 for c in runs) / max(len(runs), 1)
    seqs = [abs(c.seq_error) for c in checks if c.seq_error is not None]
    within = sum(s <= 0.15 for s in seqs) / max(len(seqs), 1)
    bare = sum(c.fits_no_headroom == (c.outcome == "fits") for c in runs) / max(len(runs), 1)
    lines.append(
        f"  goals: fit verdicts {agree:.0%} right strict, {agree3:.0%} consistent three-way (goal >= 90%); "
        f"longest sequence (nominal) within 15% on {within:.0%} of rows (goal: all); without the headroom "
        f"{bare:.0%} of strict verdicts right"
    )
    return lines


def detail_lines(checks: list[Check]) -> list[str]:
    """One line per row: the range, the nominal estimate, the measurement and the verdicts."""
    out = []
    for c in checks:
        measured = f"{c.measured_gb:6.1f}" if c.measured_gb is not None else "     -"
        seq = (
            f" seq {c.predicted_seq}/{c.measured_seq} "
            f"({c.seq_error:+.0%}; range {c.seq_strict}-{c.seq_loose})"
            if c.seq_error is not None
            else ""
        )
        mark = "ok " if c.agrees or c.kind != "run" else ("~  " if c.agrees3 else "XX ")
        nominal = f"{c.nominal_gb:6.1f}" if c.nominal_gb is not None else "     -"
        out.append(
            f"  {mark}{c.label:<72} {c.low_gb:6.1f}-{c.high_gb:6.1f} (nom {nominal}) / {c.usable_gb:5.1f} "
            f"measured {measured} {c.outcome}{seq}"
        )
    return out


def memory_validation_lines(knowledge: Knowledge | None = None, *, detail: bool = False) -> list[str]:
    """The memory-validation section of `model evaluate`; one line when the CSV is not installed."""
    if not CSV_PATH.is_file():
        return [
            "memory validation: benchmarks/memory_validation.csv is not in this installation "
            "(run from a source checkout)"
        ]
    if knowledge is None:
        from advisor.catalog.loader import load_knowledge

        knowledge = load_knowledge()
    try:
        checks = check_all(knowledge)
    except (AdvisorError, ValueError, KeyError) as exc:
        return [f"memory validation: cannot read {CSV_PATH.name}: {str(exc).splitlines()[0]}"]
    head = [
        f"Memory model against {len(checks)} published or measured runs "
        f"(benchmarks/memory_validation.csv, default headroom):"
    ]
    return head + (detail_lines(checks) if detail else []) + summary_lines(checks)
