"""Appends H200 measurements (results/*.jsonl) to benchmarks/memory_validation.csv as source gpu-advisor-h200.

Run from the repository root after a new measurement: `python3 benchmarks/device/to_memory_rows.py`. Rows of
this source already in the CSV are replaced, so the script is idempotent.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSV_PATH = HERE.parent / "memory_validation.csv"
SOURCE = "gpu-advisor-h200"
FIXED = "results/h200-hf-training-2026-11-30.jsonl"
LONGEST = "results/h200-hf-longest-seq-2026-11-30.jsonl"
TOTAL_GB = 150.11  # torch.cuda.mem_get_info total on the measured H200 (143,771 MiB)
WORKLOAD = {"mixed": "finetune", "pure-bf16": "finetune", "lora": "lora"}
MODE_NOTE = {
    "mixed": "fp32 weights (master copy) with bf16 autocast and torch AdamW (fused): the Hugging Face "
    "Trainer's "
    "default with bf16=True",
    "pure-bf16": "weights, gradients and AdamW states in bf16 (no fp32 master copy), torch AdamW (fused)",
    "lora": "PEFT LoRA rank 16 (alpha 32) on q,k,v,o,gate,up,down over a frozen bf16 base; AdamW on the "
    "adapters",
}


def _base(row: dict, ref: str) -> dict:
    mode = row["mode"]
    return {
        "source": SOURCE,
        "source_ref": f"this repository: benchmarks/device/{ref} (measure_hf_training.py)",
        "model": row["model"],
        "workload": WORKLOAD[mode],
        "gpu": "h200",
        "gpu_memory_gb": TOTAL_GB,
        "gpu_count": 1,
        "precision": "bf16",
        "tp": 1,
        "pp": 1,
        "cp": 1,
        "dp": 1,
        "zero_stage": 0,
        "recompute": "full" if row["grad_ckpt"] else "none",
        "local_batch": row["micro_batch"],
        "micro_batch": row["micro_batch"],
        "optimizer": "adamw",
        "stack": "hf",
        "lora_rank": 16 if mode == "lora" else "",
        "offload": "none",
        "master_weights": "yes" if mode == "mixed" else "no",
    }


def fixed_rows() -> list[dict]:
    out = []
    for line in (HERE / FIXED).read_text().splitlines():
        row = json.loads(line)
        if "mode" not in row:
            continue
        fits = row["outcome"] == "fits"
        out.append(
            _base(row, FIXED)
            | {
                "seq_len": row["seq_len"],
                "measured_peak": row["peak_reserved_gb"] if fits else "",
                "unit": "GB" if fits else "",
                "memory_kind": "torch max_memory_reserved (CUDA context of 0.55 GB not included)"
                if fits
                else "",
                "outcome": row["outcome"],
                "kind": "run",
                "note": MODE_NOTE[row["mode"]] + "; sdpa attention; model loss (logits upcast to fp32); "
                f"{'gradient checkpointing (non-reentrant)' if row['grad_ckpt'] else 'no checkpointing'}; "
                f"measured {row.get('tokens_per_s', 'n/a')} tokens/s",
            }
        )
    return out


def longest_rows() -> list[dict]:
    out = []
    for line in (HERE / LONGEST).read_text().splitlines():
        row = json.loads(line)
        if row.get("kind") != "longest":
            continue
        out.append(
            _base(row, LONGEST)
            | {
                "seq_len": row["longest_fitting_seq_len"],
                "measured_peak": "",
                "unit": "",
                "memory_kind": "none: the GPU's memory is the limit, seq_len the longest multiple of 1024 "
                "that trained",
                "outcome": "fits",
                "kind": "max_seq_len",
                "note": MODE_NOTE[row["mode"]] + f"; bisection: {row['longest_fitting_seq_len']} fits, "
                f"{row['first_failing_seq_len']} does "
                f"not{'' if row['converged'] else ' (not converged to 1024)'}; "
                f"{'gradient checkpointing' if row['grad_ckpt'] else 'no checkpointing'}",
            }
        )
    return out


def main() -> None:
    with CSV_PATH.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        names = list(reader.fieldnames or [])
        kept = [r for r in reader if r["source"] != SOURCE]
    if "master_weights" not in names:
        names.insert(names.index("offload") + 1, "master_weights")
    rows = kept + fixed_rows() + longest_rows()
    with CSV_PATH.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in names})
    print(f"{CSV_PATH.name}: {len(rows)} rows, {len(rows) - len(kept)} from {SOURCE}")


if __name__ == "__main__":
    main()
