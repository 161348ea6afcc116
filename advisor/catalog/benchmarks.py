"""Provides the schema and reader of benchmarks.csv: measured training throughput, one run a row."""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from advisor.question.errors import KnowledgeError
from advisor.question.records import Check, NonNegInt, PosFloat, PosInt, validate

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from advisor.catalog.loader import Knowledge

COLUMNS = (
    "workload",
    "gpu",
    "count",
    "nodes",
    "precision",
    "batch_per_gpu",
    "seq_len",
    "throughput",
    "unit",
    "grad_accum",
    "sharding",
    "recompute",
    "reported_mfu",
    "software",
    "source",
    "row_ref",
    "note",
)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class BenchmarkRow:
    """One measured run."""

    workload: str
    gpu: str
    count: PosInt
    nodes: PosInt
    precision: Literal["fp32", "tf32", "fp16", "bf16", "fp8"]
    batch_per_gpu: PosFloat | None = None
    seq_len: NonNegInt = 0
    throughput: PosFloat
    unit: str
    grad_accum: PosInt | None = None
    sharding: Literal["ddp", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op"] | None = None
    recompute: Literal["none", "selective", "full"] | None = None
    reported_mfu: Annotated[float, Check(gt=0, le=1)] | None = None
    software: str = ""
    source: Annotated[str, Check(pattern=r"^([\w.\-]+/[\w.\-]+@[0-9a-f]{40}:\S+|user:.+)$")]
    """owner/repo@commit:path for shipped rows; 'user:<file>' for a user's calibration runs."""
    row_ref: str = ""
    note: str = ""

    @property
    def zero_stage(self) -> int:
        """ZeRO stage equivalent of the sharding column."""
        return {"zero1": 1, "zero2": 2, "zero3": 3, "fsdp-full": 3, "fsdp-grad-op": 2}.get(
            self.sharding or "", 0
        )


# A blank CSV cell of these columns means None (seq_len: 0).
_BLANK_IS_NONE = ("batch_per_gpu", "grad_accum", "sharding", "recompute", "reported_mfu")


def benchmark_row(record: dict[str, Any]) -> BenchmarkRow:
    """One CSV record (text cells) as a validated row; pydantic's ValidationError names the field."""
    return validate(BenchmarkRow, _blanks(record))


def _blanks(record: dict[str, Any]) -> dict[str, Any]:
    out = {k: (None if k in _BLANK_IS_NONE and v == "" else v) for k, v in record.items()}
    if out.get("seq_len") == "":
        out["seq_len"] = 0
    return out


def parse_benchmarks(text: str, name: str = "benchmarks.csv") -> list[BenchmarkRow]:
    """Parse and validate benchmark CSV text; KnowledgeError names the line and the field."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise KnowledgeError(f"{name}: columns must be exactly: {', '.join(COLUMNS)}")
    raw = list(reader)
    from pydantic import ValidationError

    try:
        return validate(list[BenchmarkRow], [_blanks(r) for r in raw])
    except ValidationError as exc:
        err = exc.errors()[0]
        index, field = err["loc"][0], ".".join(str(p) for p in err["loc"][1:])
        got = raw[int(index)].get(field) if isinstance(index, int) else None
        line = int(index) + 2 if isinstance(index, int) else "?"
        raise KnowledgeError(f"{name}: line {line}: {field}: {err['msg']} (got {got!r})") from exc


def read_benchmarks(root: Traversable | Path) -> list[BenchmarkRow]:
    """The benchmark table below a knowledge root."""
    return parse_benchmarks(
        root.joinpath("benchmarks.csv").read_text(encoding="utf-8"), "knowledge/benchmarks.csv"
    )


@functools.lru_cache(maxsize=4)
def _benchmarks_of(knowledge: Knowledge) -> tuple[BenchmarkRow, ...]:
    return tuple(read_benchmarks(knowledge.root))


def benchmarks_of(knowledge: Knowledge) -> tuple[BenchmarkRow, ...]:
    """The benchmark table of a knowledge base (read once, on first use)."""
    return _benchmarks_of(knowledge)
