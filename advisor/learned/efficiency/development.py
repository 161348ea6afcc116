"""Provides the development sets' training runs as samples: published runs from sources the training never
reads (benchmarks/<set>_training_runs.csv, docs/heldout.md), which the interval's choice checks its width on
as one more held-out family (llm_eval.levels_for). They never enter the fit, its penalty or its bounds.

Only the sets named in DEVELOPMENT_SETS are read: a sealed set added to benchmarks/ stays out of the choice
until it is scored and named here. A run is read as its source states it, each blank at the value the
training rows' reading gives it (one GPU per model-parallel rank, no sharding, the stack's recomputation);
a model outside the catalogue is read from its shape or its parameter count, as `predict` reads them. A
LoRA run (the learned model covers full training) or a layout the core cannot build is left out. An
installed copy without benchmarks/ has no development family: the choice is then the held-out sources'
alone.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from advisor.catalog.hf_config import spec_from_shape
from advisor.catalog.loader import Knowledge
from advisor.learned.efficiency.dataset import build_dataset
from advisor.learned.efficiency.runs import PRECISION, TASK_KIND, Run
from advisor.learned.efficiency.samples import Sample
from advisor.question.errors import AdvisorError

DEVELOPMENT_SETS = ("heldout", *(f"heldout{n}" for n in range(2, 10)))
DEVELOPMENT_ORIGIN = "development:"
"""The source of a development run: development:<set>:<source_id> (one group per source of a set)."""


def _int(value: str) -> int | None:
    return int(float(value)) if value.strip() else None


def _count(text: str) -> float:
    """A parameter count as written in a cell: 2.7B, 350M, 1.2T or a plain number."""
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(text[-1:].upper(), 1.0)
    return float(text[:-1] if scale != 1.0 else text) * scale


def _model_of(r: dict[str, str]) -> tuple[Any, float | None]:
    """A row's model outside the catalogue: its shape (model_shape, as `predict --layers ...` reads it) as
    a spec, or its parameter count alone (model_params); (None, None) for a catalogue model or none."""
    if r.get("model"):
        return None, None
    if r.get("model_params"):
        return None, _count(r["model_params"])
    parts = [p.split("=") for p in r.get("model_shape", "").split(";") if "=" in p]
    shape: dict[str, Any] = {k.strip(): v.strip() for k, v in parts}
    if not shape:
        return None, None
    gated = shape.pop("ffn_type", "gated") == "gated"
    try:
        dims: dict[str, Any] = {k: int(v) for k, v in shape.items()}
        return spec_from_shape(**dims, gated=gated), None
    except (TypeError, ValueError, AdvisorError):
        return None, None


def _stated(r: dict[str, str]) -> dict[str, Any]:
    """The configuration a row states, each blank at the training rows' reading of a blank."""

    def number(column: str) -> int | None:
        return _int(r.get(column, ""))

    return {
        "seq_len": number("seq_len") or 0,
        "micro_batch": number("micro_batch"),
        "global_batch": number("global_batch"),
        **{column: number(column) or 1 for column in ("tp", "pp", "cp", "ep")},
        "zero": number("zero"),
        "shard_group": number("shard_group"),
        "recompute": r.get("recompute") or None,
        "offload": r.get("offload") or None,
    }


def run_of_development_record(knowledge: Knowledge, name: str, r: dict[str, str]) -> Run | None:
    """A development set's training row as a run (None: left out, see the module's note)."""
    kind = TASK_KIND.get(r.get("workload", ""))
    precision = PRECISION.get(r.get("precision") or "bf16")
    if r.get("lora_rank") or kind is None or precision is None:
        return None
    spec, params = _model_of(r)
    if spec is None and params is None and r.get("model", "") not in {m.id for m in knowledge.models}:
        return None
    gpu = next((g for g in knowledge.gpus if g.id == r["gpu"]), None)
    count = int(r["count"])
    if gpu is None or count < 1:
        return None
    nodes = max(1, -(-count // gpu.gpus_per_node))
    return Run(
        workload=r.get("model") or r.get("source_model") or "custom",
        spec=spec,
        params=params,
        gpu=r["gpu"],
        count=count,
        nodes=nodes if count % nodes == 0 else 1,
        precision=precision,
        throughput=float(r["tokens_per_s_per_gpu"]) * count,
        unit="tokens/s",
        stack=r.get("stack") or "fsdp",
        source=f"{DEVELOPMENT_ORIGIN}{name}:{r['source_id']}",
        kind=kind,
        software=r.get("software", ""),
        row_ref=r.get("id", ""),
        family="independent",
        **_stated(r),
    )


def development_samples(knowledge: Knowledge, root: Path | None = None) -> list[Sample]:
    """The development sets' LLM runs as samples (none where benchmarks/ is absent)."""
    if root is None:
        if not isinstance(knowledge.root, Path):
            return []  # an installed copy: no development sets
        root = knowledge.root.parent
    folder = root / "benchmarks"
    runs = []
    for name in DEVELOPMENT_SETS:
        path = folder / f"{name}_training_runs.csv"
        if not path.is_file():
            continue
        with path.open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                run = run_of_development_record(knowledge, name, {k: (v or "").strip() for k, v in r.items()})
                if run is not None:
                    runs.append(run)
    return [s for s in build_dataset(knowledge, runs).samples if s.family == "llm"]
