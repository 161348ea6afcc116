"""Measured serving rows (knowledge/serving_benchmarks.csv), each built into the replica the step model
prices."""

from __future__ import annotations

import csv
import hashlib
import random
import zlib
from collections import Counter
from dataclasses import dataclass, field
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from advisor.learned.serving.replica import EngineFlags, Setup, build
from advisor.physics.lengths import drawn
from advisor.question.vocab import ENGINES

if TYPE_CHECKING:
    from advisor.catalog.loader import Knowledge
    from advisor.job.resolve import Job

CSV_NAME = "serving_benchmarks.csv"
KINDS = ("offline", "online", "concurrency", "batch", "static", "ttft-bs1")
MAX_REQUESTS = 2048  # a closed loop's simulated requests: enough for its waves to repeat, cheap to price


@dataclass(frozen=True, slots=True, repr=False)
class Measured:
    """A latency figure as published: its value in ms and which statistic it is (mean, p50, p90, p99)."""

    ms: float
    stat: str
    kind: str = "tpot"
    """'tpot' (per request: (last - first token) / (output - 1)) or 'itl' (per gap between streamed
    tokens)."""


@dataclass(eq=False, repr=False)
class Case:
    """One measured row: its configuration, replica and load, and what was measured."""

    kind: str
    model: str
    gpu: str
    vendor: str
    engine: str
    family: str
    precision: str
    tp: int
    pp: int
    isl: int
    osl: int
    dataset: str
    batch: int | None
    concurrency: int | None
    request_rate: float | None  # None = infinite
    output_tok_s: float | None  # whole replica
    ttft: tuple[Measured, ...]
    tpot: tuple[Measured, ...]
    setup: Setup
    moe: bool
    ref: str
    requests: int | None = None
    """Requests the run sent, where the source states it (None: counted in the steady state)."""
    version: str | None = None
    """The engine release the row measured (knowledge/serving_benchmarks.csv engine_version)."""
    cache: dict[str, Any] = field(default_factory=dict)
    """Schedules of closed loops (time-free, so built once per row)."""

    @property
    def fp8(self) -> bool:
        return self.precision == "fp8"


def csv_text() -> str:
    return files("knowledge").joinpath(CSV_NAME).read_text(encoding="utf-8")


def data_hash() -> str:
    """sha256 of the CSV, recorded beside the model so a stale model is visible."""
    return hashlib.sha256(csv_text().encode("utf-8")).hexdigest()


def _num(text: str) -> float | None:
    return float(text) if text not in ("", "inf") else None


def _int(text: str) -> int | None:
    return int(float(text)) if text else None


def _latencies(r: dict[str, str], name: str) -> tuple[Measured, ...]:
    """The central figure and the P99 of one latency, where given (TPOT falls back to the ITL)."""
    out = []
    for col in (name, "itl") if name == "tpot" else (name,):
        value, stat = _num(r.get(f"{col}_ms", "")), r.get(f"{col}_pctl", "") or "mean"
        if value:
            out.append(Measured(value, stat, col))
            p99 = _num(r.get(f"{col}_p99_ms", ""))
            if p99 and stat != "p99":
                out.append(Measured(p99, "p99", col))
            break
    return tuple(out)


def _job(knowledge: Knowledge, model: str, isl: int, osl: int) -> Job:
    from advisor.job.inputs import Workload
    from advisor.job.resolve import resolve_job

    w = Workload(model=model, kind="inference", prompt_tokens=isl, output_tokens=osl)
    return resolve_job(knowledge, w, need_data=False)


def _case(knowledge: Knowledge, r: dict[str, str]) -> Case | str:
    """A usable row, or why it is left out."""
    gpus = {g.id: g for g in knowledge.gpus}
    gpu, ids = gpus.get(r["gpu"]), {m.id for m in knowledge.models}
    if gpu is None or r["model"] not in ids:
        return f"{'gpu ' + r['gpu'] if gpu is None else 'model ' + r['model']} not in the catalogue"
    if r["kind"] not in KINDS or r["engine"] not in ENGINES:
        return f"kind {r['kind']} / engine {r['engine']} not modelled"
    isl, osl = round(float(r["isl"])), round(float(r["osl"]))
    try:
        job = _job(knowledge, r["model"], isl, osl)
    except ValueError as exc:  # InputError: e.g. longer than the model's context
        return f"not servable as stated ({str(exc).split(':')[0]})"
    kv = r.get("kv_precision") or ("fp8" if r["precision"] == "fp8" and r["engine"] == "trtllm" else "bf16")
    tp, pp = int(r["tp"]), int(r.get("pp") or 1)
    a, version = knowledge.assumptions, r.get("engine_version") or None
    flags = EngineFlags(
        max_num_seqs=_int(r.get("max_num_seqs", "")),
        max_batched_tokens=_int(r.get("max_num_batched_tokens", "")),
        gpu_memory_utilization=_num(r.get("gpu_memory_utilization", "")),
        max_model_len=_int(r.get("max_model_len", "")),
    )
    setup = build(job, gpu, tp, pp, r["precision"], r["engine"], a, kv, version, flags)
    if setup is None:
        return f"no {r['precision']} peak for {r['gpu']} in gpus.toml"
    return Case(
        kind=r["kind"],
        model=r["model"],
        gpu=r["gpu"],
        vendor=gpu.vendor,
        engine=r["engine"],
        family=r.get("family", "vendor"),
        precision=r["precision"],
        tp=tp,
        pp=pp,
        isl=isl,
        osl=osl,
        dataset=r.get("dataset") or "fixed",
        batch=_int(r["batch"]),
        concurrency=_int(r.get("concurrency", "")),
        request_rate=_num(r["request_rate"]),
        output_tok_s=_num(r["output_tok_s"]),
        ttft=_latencies(r, "ttft"),
        tpot=_latencies(r, "tpot"),
        setup=setup,
        moe=job.arch is not None and job.arch.experts > 1,
        ref=f"{r['source'].split(':')[0]} {r['row_ref']}",
        requests=_int(r.get("requests", "")),
        version=version,
    )


def load_cases(knowledge: Knowledge | None = None) -> tuple[list[Case], Counter[str]]:
    """Usable rows, and the count of rows left out by reason."""
    if knowledge is None:
        from advisor.catalog.loader import load_knowledge

        knowledge = load_knowledge()
    cases: list[Case] = []
    dropped: Counter[str] = Counter()
    for r in csv.DictReader(csv_text().splitlines()):
        got = _case(knowledge, r)
        if isinstance(got, str):
            dropped[got] += 1
        else:
            cases.append(got)
    return cases, dropped


def lengths_of(c: Case, n: int) -> list[tuple[int, int]]:
    """(prompt, output) of `n` requests like the row's: fixed, or drawn around its means with a fixed seed
    (ShareGPT-like: lognormal, spread 0.8; random-uniform: +-25%; advisor/physics/lengths.py, as answers
    draw them, uncapped as the fit always drew them)."""
    dataset = c.dataset if c.dataset in ("sharegpt", "fixed", "sonnet", "") else "random-uniform"
    return drawn(c.isl, c.osl, n, dataset, random.Random(zlib.crc32(c.ref.encode())), capped=False)
