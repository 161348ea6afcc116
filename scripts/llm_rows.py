"""Shared pieces of the llm_benchmarks.csv curation: columns, row builders and the sources' FLOP formulas.

Standard library only. The FLOP formulas are the ones each source states it used, so a reported TFLOPS or MFU
converts back to the tokens/s the source measured; each is named where it is used.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path

from source_tables import SourceTable, fmt, number

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = {"k": 1e3, "M": 1e6, "T": 1e12}

COLUMNS = [
    "model",
    "source_model",
    "gpu",
    "source_gpu",
    "count",
    "nodes",
    "precision",
    "tp",
    "pp",
    "cp",
    "ep",
    "vp",
    "dp",
    "sharding",
    "recompute",
    "offload",
    "micro_batch",
    "global_batch",
    "grad_accum",
    "seq_len",
    "task",
    "stack",
    "software",
    "tokens_per_s_per_gpu",
    "tokens_per_s",
    "model_tflops_per_gpu",
    "model_flops_per_token",
    "reported_mfu",
    "hardware_tflops_per_gpu",
    "reported_hfu",
    "memory_gib",
    "gpu_hours",
    "train_tokens",
    "family",
    "measured",
    "source",
    "table",
    "row_ref",
    "note",
]
FAMILIES = {"vendor", "paper", "report", "independent"}
# How tokens_per_s_per_gpu was obtained from what the source printed.
MEASURED = {"tokens/s", "iteration-time", "tflops", "mfu", "gpu-hours", "wall-clock"}


def base_row(src: SourceTable, family: str, measured: str, **kw: object) -> dict[str, str]:
    """A row with the source's ref and table, its family and how its throughput was measured."""
    row = dict.fromkeys(COLUMNS, "")
    row.update(source=src.ref, table=src.table, family=family, measured=measured)
    for k, v in kw.items():
        row[k] = v if isinstance(v, str) else fmt(v)  # type: ignore[arg-type]
    return row


def finish(row: dict[str, str], per_gpu: float, tflops: float | None, gpn: int) -> dict[str, str]:
    """Fill the columns every source derives the same way (totals, nodes, dp, FLOPs per token)."""
    count = int(row["count"])
    row["tokens_per_s_per_gpu"] = fmt(per_gpu)
    row["tokens_per_s"] = fmt(per_gpu * count)
    row["nodes"] = fmt(max(1, -(-count // gpn)))
    model_par = int(row["tp"] or 1) * int(row["pp"] or 1) * int(row["cp"] or 1)
    row["dp"] = fmt(count // model_par)
    if tflops is not None:
        row["model_tflops_per_gpu"] = fmt(tflops)
        row["model_flops_per_token"] = fmt(float(f"{tflops * 1e12 / per_gpu:.4g}"))
    return row


def round_sig(x: float, digits: int = 6) -> float:
    """Derived figures keep 6 significant digits (the sources print 3 to 5)."""
    return float(f"{x:.{digits}g}")


def catalogue_models() -> dict[str, dict]:
    """models.toml entries by id (the shapes the FLOP formulas need)."""
    with (ROOT / "knowledge" / "models.toml").open("rb") as f:
        return {m["id"]: m for m in tomllib.load(f)["model"]}


def megatron_flops_per_token(m: dict, seq: int, recompute: bool) -> float:
    """Narayanan et al. 2021 sec. 5.1: 96 B s l h^2 (1 + s/6h + V/16lh) per step with full recompute (the
    paper's 'achieved teraFLOP/s'); without the recompute forward, 72 B s l h^2 (1 + s/6h) + 6 B s h V."""
    l_, h, v = m["layers"], m["hidden"], m["vocab"]
    if recompute:
        return 96 * l_ * h * h * (1 + seq / (6 * h) + v / (16 * l_ * h))
    return 72 * l_ * h * h * (1 + seq / (6 * h)) + 6 * h * v


def dense_causal_flops_per_token(m: dict, seq: int) -> float:
    """Model FLOPs of a dense GQA transformer with causal attention (stas00/ml-engineering benchmark.py
    estimate_tflos): 6 x (layers (3 h f + h (2 q + 2 kv)) + V h) + 6 x s x head_dim x heads x layers."""
    h, heads, layers = m["hidden"], m["heads"], m["layers"]
    hd = m.get("kv_channels") or h // heads
    q, kv = heads * hd, m["kv_heads"] * hd
    dense = layers * (3 * h * m["ffn_hidden"] + h * (2 * q + 2 * kv)) + m["vocab"] * h
    return 6 * dense + 6 * seq * hd * heads * layers


def nanotron_flops_per_token(m: dict, seq: int) -> float:
    """nanotron get_flops (src/nanotron/models/llama.py @ e24d2483): 3 x forward, forward = 2 L s h (h + 2 kv
    hd) + 4 L s^2 h (q.k and attention.v, full square) + 2 L s h h + 6 L s h f + 2 s h V, per token."""
    h, heads, layers, f = m["hidden"], m["heads"], m["layers"], m["ffn_hidden"]
    hd = h // heads
    fwd = (
        2 * layers * h * (heads * hd + 2 * m["kv_heads"] * hd)
        + 4 * layers * heads * hd * seq
        + 2 * layers * heads * hd * h
        + 6 * layers * h * f
        + 2 * h * m["vocab"]
    )
    return 3 * fwd


def amount(text: str) -> float:
    """'169k' -> 169000.0; '2.664M' -> 2664000.0; '14.8T' -> 1.48e13 (decimal prefixes); '2e12' as is."""
    t = text.strip()
    if t and t[-1] in SUFFIX:
        return float(t[:-1]) * SUFFIX[t[-1]]
    value = number(t)
    if value is None:
        raise SystemExit(f"empty amount {text!r}")
    return value


def report_row(
    src: SourceTable, measured: str, gpu_hours: float, tokens: float, **kw: object
) -> dict[str, str]:
    """An end-to-end report: tokens / GPU-hours, with or without a GPU count."""
    per_gpu = round_sig(tokens / (gpu_hours * 3600))
    row = base_row(src, "report", measured, gpu_hours=fmt(gpu_hours), train_tokens=fmt(tokens), **kw)
    if row["count"]:
        return finish(row, per_gpu, None, 8)
    row["tokens_per_s_per_gpu"] = fmt(per_gpu)
    return row


def wall_clock_days(start: str, end: str) -> float:
    """Whole days between two dates (the sources give no hour for one end: +- 0.5 day, said in the note)."""
    return float((dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days)
