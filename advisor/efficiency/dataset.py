"""Provides the training set of the efficiency model: benchmark rows rebuilt as the core models them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

from advisor.catalog.benchmarks import BenchmarkRow
from advisor.catalog.loader import Knowledge
from advisor.errors import AdvisorError
from advisor.efficiency.features import Sample, sample_of

# Every file whose content changes the features or the targets.
DATA_FILES = ("benchmarks.csv", "gpus.toml", "models.toml", "assumptions.toml")


@dataclass(frozen=True)
class Dataset:
    """Samples and the rows that could not be modelled, with why."""

    samples: list[Sample]
    skipped: list[tuple[BenchmarkRow, str]]


def build_dataset(knowledge: Knowledge, rows: Iterable[BenchmarkRow]) -> Dataset:
    """Turn measured rows into samples (features, speed of light, efficiency)."""
    samples, skipped = [], []
    for row in rows:
        try:
            sample = sample_of(knowledge, row)
        except AdvisorError as exc:
            skipped.append((row, str(exc)))
            continue
        if sample is None:
            skipped.append((row, f"{row.gpu} has no {row.precision} peak in the catalogue"))
        else:
            samples.append(sample)
    return Dataset(samples, skipped)


def data_hash(knowledge: Knowledge, extra: bytes = b"") -> str:
    """SHA-256 over the knowledge files the training reads (and any extra rows), in a fixed order."""
    digest = hashlib.sha256()
    for name in DATA_FILES:
        digest.update(name.encode() + b"\0" + knowledge.root.joinpath(name).read_bytes() + b"\0")
    digest.update(extra)
    return digest.hexdigest()


def family_of(sample_kind_code: float) -> str:
    """Interval family of a sample: LLM runs (tight) or the rest (noisier)."""
    return "llm" if sample_kind_code == 6.0 else "other"
