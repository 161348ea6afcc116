"""Provides the training set of the efficiency model: measured runs rebuilt as the core models them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from advisor.catalog.benchmarks import benchmarks_of
from advisor.catalog.loader import Knowledge
from advisor.catalog.stacks import stacks_of
from advisor.learned.efficiency.features import family_of  # noqa: F401  (re-exported)
from advisor.learned.efficiency.runs import Run, read_llm_runs, run_of_row
from advisor.learned.efficiency.samples import Sample, sample_of
from advisor.question.errors import AdvisorError

# Every file whose content changes the features or the targets.
DATA_FILES = (
    "benchmarks.csv",
    "llm_benchmarks.csv",
    "gpus.toml",
    "models.toml",
    "assumptions.toml",
    "training_stacks.toml",
    # The composed step of every LLM run is priced from these: a new row changes what the residual is of.
    "operations/gemm.csv",
    "operations/attention.csv",
    "operations/memory.csv",
    "operations/collectives.csv",
)


@dataclass(frozen=True, slots=True, repr=False)
class Dataset:
    """Samples and the runs that could not be modelled, with why."""

    samples: list[Sample]
    skipped: list[tuple[str, str]]
    """(which run, why)."""


def shipped_runs(knowledge: Knowledge) -> tuple[list[Run], list[tuple[str, str]]]:
    """Every shipped measured run: benchmarks.csv (Lambda, MosaicML) and llm_benchmarks.csv (full
    configurations)."""
    llm, skipped = read_llm_runs(knowledge)
    return [run_of_row(r) for r in benchmarks_of(knowledge)] + llm, skipped


def build_dataset(
    knowledge: Knowledge, runs: Iterable[Run], skipped: Iterable[tuple[str, str]] = ()
) -> Dataset:
    """Turn measured runs into samples (features, speed of light, efficiency)."""
    stacks_of(knowledge)  # a broken stacks file must fail here, not skip every run one by one
    samples, out = [], list(skipped)
    for run in runs:
        label = f"{run.origin} {run.row_ref or run.workload} ({run.gpu} x{run.count})"
        try:
            sample = sample_of(knowledge, run)
        except (AdvisorError, ValueError) as exc:
            out.append((label, str(exc).splitlines()[0]))
            continue
        if sample is None:
            out.append((label, f"{run.gpu} has no {run.precision} peak in the catalogue"))
        else:
            samples.append(sample)
    return Dataset(samples, out)


def shipped_dataset(knowledge: Knowledge, extra: Iterable[Run] = ()) -> Dataset:
    """The shipped runs (plus extra ones, e.g. a user's calibration) as samples."""
    runs, skipped = shipped_runs(knowledge)
    return build_dataset(knowledge, [*runs, *extra], skipped)


def data_hash(knowledge: Knowledge, extra: bytes = b"") -> str:
    """SHA-256 over the knowledge files the training reads (and any extra rows), in a fixed order."""
    digest = hashlib.sha256()
    for name in DATA_FILES:
        digest.update(name.encode() + b"\0" + knowledge.root.joinpath(name).read_bytes() + b"\0")
    digest.update(extra)
    return digest.hexdigest()
