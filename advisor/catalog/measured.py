"""Provides measured_batches(): the per-GPU batch of every single-GPU run of benchmarks.csv, cached beside the
knowledge files, so that a search's default batch is read without the table's schema (pydantic)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.catalog.loader import Knowledge

FILE = "benchmarks.csv"


def _single_gpu_batches(text: str) -> list[dict[str, Any]]:
    """The table validated as a whole (the same words as benchmarks_of on a bad row), then what a default
    batch reads of it."""
    from advisor.catalog.benchmarks import parse_benchmarks

    rows = parse_benchmarks(text, f"knowledge/{FILE}")
    return [
        {"workload": r.workload, "gpu": r.gpu, "precision": r.precision, "batch_per_gpu": r.batch_per_gpu}
        for r in rows
        if r.batch_per_gpu and r.count == 1
    ]


@functools.lru_cache(maxsize=4)
def measured_batches(knowledge: Knowledge) -> tuple[dict[str, Any], ...]:
    """Each single-GPU benchmark run with a batch: workload, gpu, precision, batch_per_gpu (read once)."""
    from advisor.catalog.loader import cached_records

    return tuple(cached_records(knowledge.root, FILE, _single_gpu_batches, parse=_text))


def _text(raw: bytes, name: str) -> str:
    return raw.decode("utf-8")
