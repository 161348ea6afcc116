"""Provides the schema and reader of benchmarks.csv: measured training throughput, one run a row."""

from __future__ import annotations

import csv
import functools
import io
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import (
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from advisor.catalog.strict import Strict
from advisor.question.errors import KnowledgeError

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


class BenchmarkRow(Strict):
    """One measured run."""

    workload: str
    gpu: str
    count: PositiveInt
    nodes: PositiveInt
    precision: Literal["fp32", "tf32", "fp16", "bf16", "fp8"]
    batch_per_gpu: PositiveFloat | None = None
    seq_len: NonNegativeInt = 0
    throughput: PositiveFloat
    unit: str
    grad_accum: PositiveInt | None = None
    sharding: Literal["ddp", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op"] | None = None
    recompute: Literal["none", "selective", "full"] | None = None
    reported_mfu: float | None = Field(default=None, gt=0, le=1)
    software: str = ""
    source: str = Field(pattern=r"^([\w.\-]+/[\w.\-]+@[0-9a-f]{40}:\S+|user:.+)$")
    """owner/repo@commit:path for shipped rows; 'user:<file>' for a user's calibration runs."""
    row_ref: str = ""
    note: str = ""

    @field_validator("batch_per_gpu", "grad_accum", "sharding", "recompute", "reported_mfu", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("seq_len", mode="before")
    @classmethod
    def _empty_is_zero(cls, value: object) -> object:
        return 0 if value == "" else value

    @property
    def zero_stage(self) -> int:
        """ZeRO stage equivalent of the sharding column."""
        return {"zero1": 1, "zero2": 2, "zero3": 3, "fsdp-full": 3, "fsdp-grad-op": 2}.get(
            self.sharding or "", 0
        )


_ROWS = TypeAdapter(list[BenchmarkRow])


def parse_benchmarks(text: str, name: str = "benchmarks.csv") -> list[BenchmarkRow]:
    """Parse and validate benchmark CSV text; KnowledgeError names the line and the field."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise KnowledgeError(f"{name}: columns must be exactly: {', '.join(COLUMNS)}")
    raw = list(reader)
    try:
        return _ROWS.validate_python(raw)
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
