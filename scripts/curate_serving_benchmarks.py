#!/usr/bin/env python3
"""Build knowledge/serving_benchmarks.csv from the transcribed tables in knowledge/sources/serve_*.csv.

Run from anywhere:  python scripts/curate_serving_benchmarks.py [--check]
Same input, same bytes; --check compares with the committed file (exit 1 if different).
Row kinds: offline (requests at an infinite rate, in-flight batching: maximum output throughput), online
(a fixed request rate: TTFT and inter-token latency at that load), static (a fixed batch, no in-flight
batching), ttft-bs1 (first-token latency of one request alone).
"""

from __future__ import annotations

import sys
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_tables import SourceTable, fmt, number, read_source, write_csv

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "knowledge" / "sources"
OUT = ROOT / "knowledge" / "serving_benchmarks.csv"

COLUMNS = [
    "kind",
    "model",
    "source_model",
    "gpu",
    "source_gpu",
    "count",
    "tp",
    "pp",
    "ep",
    "precision",
    "isl",
    "osl",
    "batch",
    "request_rate",
    "output_tok_s",
    "output_tok_s_per_gpu",
    "requests_s",
    "ttft_ms",
    "itl_ms",
    "engine",
    "engine_version",
    "source",
    "table",
    "row_ref",
    "note",
]
MODELS = {
    "LLaMA v3.1 8B": "llama-3.1-8b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "LLaMA 3.1 8B": "llama-3.1-8b",
    "LLaMA v3.1 70B": "llama-3.1-70b",
    "LLaMA 3.1 70B": "llama-3.1-70b",
    "Llama 3.3 70B": "llama-3.1-70b",
    "LLaMA v3.1 405B": "llama-3.1-405b",
    "Llama 3.1 405B": "llama-3.1-405b",
    "Mistral 7B": "mistral-7b",
    "Mixtral 8x7B": "mixtral-8x7b",
    "Mixtral 8x22B": "mixtral-8x22b",
    "LLaMA 7B": "llama-2-7b",
    "LLaMA 70B": "llama-2-70b",
}
GPUS = {
    "H200": "h200",
    "H100": "h100-sxm",
    "GH200": "gh200",
    "L40S": "l40s",
    "A100": "a100-80gb-sxm",
    "B200": "b200",
    "GB200": "gb200",
    "H100 80GB HBM3": "h100-sxm",
    "H200 131GB HBM3": "h200",
}
PRECISION = {"FP8": "fp8", "FP16": "fp16", "FP4": "nvfp4", "BF16": "bf16"}
KINDS = {"offline", "online", "static", "ttft-bs1"}


def base(src: SourceTable, **kw: object) -> dict[str, str]:
    row = dict.fromkeys(COLUMNS, "")
    row.update(source=src.ref, table=src.table, engine="trtllm", pp="1", ep="1")
    for k, v in kw.items():
        row[k] = v if isinstance(v, str) else fmt(v)  # type: ignore[arg-type]
    return row


def per_gpu(row: dict[str, str]) -> dict[str, str]:
    if row["output_tok_s"]:
        row["output_tok_s_per_gpu"] = fmt(float(f"{float(row['output_tok_s']) / int(row['count']):.6g}"))
    return row


def v017(src: SourceTable) -> list[dict[str, str]]:
    cols = {
        "h200": ("H200", "fp8"),
        "h100": ("H100", "fp8"),
        "gh200": ("GH200", "fp8"),
        "l40s": ("L40S", "fp8"),
        "a100": ("A100", "fp16"),
    }
    out = []
    for i, r in enumerate(src.rows, start=1):
        for col, (label, prec) in cols.items():
            v = number(r[col])
            if v is None:
                continue
            note = "A100-SXM4-80GB" if label == "A100" else ""
            out.append(
                per_gpu(
                    base(
                        src,
                        kind="offline",
                        model=MODELS[r["model"]],
                        source_model=r["model"],
                        gpu=GPUS[label],
                        source_gpu=label,
                        count=r["tp"],
                        tp=r["tp"],
                        precision=prec,
                        isl=r["isl"],
                        osl=r["osl"],
                        request_rate="inf",
                        output_tok_s=v,
                        engine_version="0.17 (TensorRT engine)",
                        row_ref=f"row {i} column {label}",
                        note=note,
                    )
                )
            )
    return out


def v014_online(src: SourceTable) -> list[dict[str, str]]:
    out, last = [], {}
    for i, raw in enumerate(src.rows, start=1):
        r = {k: (v if v else last.get(k, "")) for k, v in raw.items()}  # merged cells repeat the row above
        last = r
        out.append(
            per_gpu(
                base(
                    src,
                    kind="online",
                    model=MODELS[r["model"]],
                    source_model=r["model"],
                    gpu=GPUS[r["gpu"]],
                    source_gpu=r["gpu"],
                    count=r["tp"],
                    tp=r["tp"],
                    precision="bf16",
                    isl=r["isl"],
                    osl=r["osl"],
                    request_rate=r["qps"].lower(),
                    output_tok_s=r["output_tok_s"],
                    requests_s=r["tput_req_s"],
                    ttft_ms=r["mean_ttft_ms"],
                    itl_ms=r["mean_itl_ms"],
                    engine_version="0.14.0 (Triton tensorrtllm_backend)",
                    row_ref=f"row {i}",
                    note="500 requests; mean TTFT and mean ITL",
                )
            )
        )
    return out


def v10(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        note = ["Llama 3.3 70B has the Llama 3.1 70B architecture"] if r["model"] == "Llama 3.3 70B" else []
        if r["system"] == "GB200":
            note.append("GB200 NVL72")
        out.append(
            per_gpu(
                base(
                    src,
                    kind="offline",
                    model=MODELS[r["model"]],
                    source_model=r["model"],
                    gpu=GPUS[r["system"]],
                    source_gpu=r["system"],
                    count=r["tp"],
                    tp=r["tp"],
                    precision=PRECISION[r["precision"]],
                    isl=r["isl"],
                    osl=r["osl"],
                    request_rate="inf",
                    output_tok_s=number(r["output_tok_s"]),
                    engine_version="1.0 (PyTorch backend)",
                    row_ref=f"cell {i}",
                    note="; ".join(note),
                )
            )
        )
    return out


def v061(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        tp, v = int(r["tp"]), number(r["value"])
        assert v is not None
        note = ["A100 variant not stated (80GB SXM assumed)"] if r["system"] == "A100" else []
        version = "0.5" if r["kind"] == "ttft" or r["system"] == "L40S" else "0.6.1"
        kw: dict[str, object] = dict(
            model=MODELS[r["model"]],
            source_model=r["model"],
            gpu=GPUS[r["system"]],
            source_gpu=r["system"],
            count=tp,
            tp=tp,
            precision=PRECISION[r["precision"]],
            isl=r["isl"],
            osl=r["osl"],
            batch=r["batch"],
            engine_version=f"{version} (TensorRT engine, static batching)",
            row_ref=f"row {i}",
        )
        if r["kind"] == "ttft":
            row = base(
                src, kind="ttft-bs1", ttft_ms=v, note="; ".join([*note, "batch 1, output length 1"]), **kw
            )
        else:
            total = v * tp if r["per_gpu"] == "1" else v
            if r["per_gpu"] == "1":
                note.append("source gives output tokens/s per GPU")
            row = per_gpu(base(src, kind="static", output_tok_s=total, note="; ".join(note), **kw))
        out.append(row)
    return out


READERS = {
    "serve_trtllm_v0.17_throughput.csv": v017,
    "serve_trtllm_v0.14_online.csv": v014_online,
    "serve_trtllm_v1.0_throughput.csv": v10,
    "serve_trtllm_v0.6.1_static.csv": v061,
}


def validate(rows: list[dict[str, str]]) -> None:
    for r in rows:
        where = f"{r['source']} {r['row_ref']}"
        if r["kind"] not in KINDS or r["precision"] not in ("fp8", "fp16", "bf16", "nvfp4"):
            raise SystemExit(f"{where}: kind {r['kind']!r} or precision {r['precision']!r} not accepted")
        if int(r["isl"]) < 1 or int(r["osl"]) < 1:
            raise SystemExit(f"{where}: input and output lengths must be positive")
        if r["kind"] != "ttft-bs1" and float(r["output_tok_s"] or 0) <= 0:
            raise SystemExit(f"{where}: throughput must be positive")


def build() -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for name, reader in READERS.items():
        rows += reader(read_source(SOURCES / name))
    validate(rows)
    return rows


def report(rows: list[dict[str, str]]) -> None:
    with (ROOT / "knowledge" / "gpus.toml").open("rb") as f:
        gpus = {g["id"] for g in tomllib.load(f)["gpu"]}
    with (ROOT / "knowledge" / "models.toml").open("rb") as f:
        models = {m["id"] for m in tomllib.load(f)["model"]}
    print(f"{len(rows)} rows written to {OUT.relative_to(ROOT)}")
    for (src, kind), n in sorted(Counter((r["source"].split(":")[0], r["kind"]) for r in rows).items()):
        print(f"  {n:4d}  {kind:9s} {src}")
    print(
        f"{sum(r['gpu'] in gpus and r['model'] in models for r in rows)} rows have GPU and model in the "
        f"catalogue"
    )
    print(
        "not in the catalogue:",
        dict(Counter(r["gpu"] for r in rows if r["gpu"] not in gpus)),
        dict(Counter(r["model"] for r in rows if r["model"] not in models)),
    )


def main(argv: list[str]) -> int:
    rows = build()
    if "--check" in argv:
        tmp = OUT.with_name(OUT.name + ".check")
        data = write_csv(tmp, COLUMNS, rows)
        tmp.unlink()
        same = OUT.exists() and OUT.read_bytes() == data
        print("serving_benchmarks.csv is " + ("up to date" if same else "OUT OF DATE: run the script"))
        return 0 if same else 1
    write_csv(OUT, COLUMNS, rows)
    report(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
