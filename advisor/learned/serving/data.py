"""Measured serving rows (knowledge/serving_benchmarks.csv) joined to the catalogue's GPU and model facts."""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from dataclasses import dataclass
from importlib.resources import files

from advisor.physics.serving import GB, Hardware, Shape

CSV_NAME = "serving_benchmarks.csv"


@dataclass(frozen=True, slots=True)
class Case:
    """One measured serving row the model can use: its configuration, physics inputs and measured figures."""

    kind: str
    model: str
    gpu: str
    engine: str
    precision: str
    tp: int
    isl: int
    osl: int
    batch: int | None
    request_rate: float | None  # None = infinite
    output_tok_s: float | None  # whole replica
    ttft_ms: float | None
    itl_ms: float | None
    shape: Shape
    hw: Hardware
    moe: bool
    ref: str


def csv_text() -> str:
    return files("knowledge").joinpath(CSV_NAME).read_text(encoding="utf-8")


def data_hash() -> str:
    """sha256 of the CSV, recorded beside the model so a stale model is visible."""
    return hashlib.sha256(csv_text().encode("utf-8")).hexdigest()


def shape_of(spec) -> Shape | None:
    if spec.kind != "llm" or not (spec.layers and spec.hidden and spec.heads):
        return None
    return Shape(
        params=spec.params,
        active_params=spec.active_params or spec.params,
        layers=spec.layers,
        hidden=spec.hidden,
        heads=spec.heads,
        kv_heads=spec.kv_heads or spec.heads,
    )


def hardware_of(gpu, precision: str, gpus: int) -> Hardware | None:
    from advisor.physics.speed import peak_flops

    if not hasattr(gpu.tflops, precision):  # e.g. nvfp4: the catalogue holds no FP4 peaks yet
        return None
    peak = peak_flops(gpu, precision)
    if peak is None:
        return None
    return Hardware(
        peak_flops=peak, bandwidth=gpu.memory_bw_gbs * GB, memory_bytes=gpu.memory_gb * GB, gpus=gpus
    )


def _num(text: str) -> float | None:
    return float(text) if text not in ("", "inf") else None


def load_cases(knowledge=None) -> tuple[list[Case], Counter[str]]:
    """Usable rows, and the count of rows left out by reason (GPU or model not in the catalogue, no peak)."""
    if knowledge is None:
        from advisor.catalog.loader import load_knowledge

        knowledge = load_knowledge()
    gpus = {g.id: g for g in knowledge.gpus}
    models = {m.id: m for m in knowledge.models}
    cases: list[Case] = []
    dropped: Counter[str] = Counter()
    for r in csv.DictReader(csv_text().splitlines()):
        gpu, spec = gpus.get(r["gpu"]), models.get(r["model"])
        if gpu is None or spec is None:
            dropped[
                f"{'gpu ' + r['gpu'] if gpu is None else 'model ' + r['model']} not in the catalogue"
            ] += 1
            continue
        shape, hw = shape_of(spec), hardware_of(gpu, r["precision"], int(r["count"]))
        if shape is None or hw is None:
            dropped[f"no {r['precision']} peak for {r['gpu']} in gpus.toml"] += 1
            continue
        cases.append(
            Case(
                kind=r["kind"],
                model=r["model"],
                gpu=r["gpu"],
                engine=r["engine"],
                precision=r["precision"],
                tp=int(r["tp"]),
                isl=int(r["isl"]),
                osl=int(r["osl"]),
                batch=int(r["batch"]) if r["batch"] else None,
                request_rate=_num(r["request_rate"]),
                output_tok_s=_num(r["output_tok_s"]),
                ttft_ms=_num(r["ttft_ms"]),
                itl_ms=_num(r["itl_ms"]),
                shape=shape,
                hw=hw,
                moe=spec.experts > 1,
                ref=f"{r['source'].split(':')[0]} {r['row_ref']}",
            )
        )
    return cases, dropped
