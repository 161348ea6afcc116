#!/usr/bin/env python3
"""Build knowledge/serving_benchmarks.csv from the transcribed tables in knowledge/sources/serve_*.csv.

Run from anywhere:  python scripts/curate_serving_benchmarks.py [--check]
Same input, same bytes; --check compares with the committed file (exit 1 if different).
Row kinds (serving_rows.KINDS): offline (requests at an infinite rate: maximum output throughput), online
(Poisson arrivals at a fixed rate: TTFT and TPOT/ITL at that load), concurrency (a closed loop with a fixed
number of requests in flight), batch (N requests submitted together once), static (a fixed batch, no
in-flight batching), ttft-bs1 (first-token latency of one request alone).
"""

from __future__ import annotations

import sys
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving_benches import READERS as BENCH_READERS
from serving_dstack import READERS as DSTACK_READERS
from serving_lmdeploy import READERS as LMDEPLOY_READERS
from serving_rows import COLUMNS, ENGINES, FAMILIES, KINDS, KV_PRECISIONS, PCTLS, PRECISIONS
from serving_trtllm import READERS as TRTLLM_READERS
from source_tables import read_source, write_csv

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "knowledge" / "sources"
OUT = ROOT / "knowledge" / "serving_benchmarks.csv"

# Order = row order of the CSV: the TensorRT-LLM pages first (the shipped model was trained on them alone).
READERS = {**TRTLLM_READERS, **LMDEPLOY_READERS, **BENCH_READERS, **DSTACK_READERS}


def _check(r: dict[str, str]) -> str:
    """What is wrong with one row, or ''."""
    closed = {"kind": KINDS, "precision": PRECISIONS, "engine": ENGINES, "family": FAMILIES}
    for col, allowed in closed.items():
        if r[col] not in allowed:
            return f"{col} {r[col]!r} not accepted (one of {', '.join(allowed)})"
    if r["kv_precision"] not in ("", *KV_PRECISIONS):
        return f"kv_precision {r['kv_precision']!r} not accepted"
    if int(r["isl"]) < 1 or int(r["osl"]) < 1:
        return "input and output lengths must be positive"
    for metric in ("ttft", "tpot", "itl"):
        if bool(r[f"{metric}_ms"]) != (r[f"{metric}_pctl"] in PCTLS):
            return f"{metric}_ms needs its percentile ({', '.join(PCTLS)}) and the percentile its figure"
    measured = [float(r[c]) for c in ("output_tok_s", "ttft_ms", "tpot_ms", "itl_ms") if r[c]]
    if not measured or min(measured) <= 0:
        return "a row needs a positive throughput or latency"
    if r["kind"] in ("offline", "static", "batch") and not r["output_tok_s"]:
        return f"a {r['kind']} row needs its output throughput"
    return ""


def validate(rows: list[dict[str, str]]) -> None:
    for r in rows:
        problem = _check(r)
        if problem:
            raise SystemExit(f"{r['source']} {r['row_ref']}: {problem}")


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
        print(f"  {n:4d}  {kind:11s} {src}")
    print("rows by engine:", dict(sorted(Counter(r["engine"] for r in rows).items())))
    loaded = [r for r in rows if r["ttft_ms"] and r["kind"] in ("online", "concurrency", "batch")]
    print(f"{len(loaded)} rows with TTFT at a stated load (online rate, concurrency or batch)")
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
