"""Provides the defaults a job takes from measured runs: the per-GPU batch the benchmarks used."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.catalog.gpus import Gpu
    from advisor.catalog.loader import Knowledge
    from advisor.job.resolve import Job


def measured_batch(knowledge: Knowledge, job: Job, gpu: Gpu, precision: str) -> int | None:
    """The per-GPU batch the benchmarks used for this workload on this GPU (or the nearest in memory)."""
    if job.spec is None or job.spec.throughput_unit is None:
        return None  # only the benchmarked workloads carry a measured batch
    from advisor.catalog.measured import measured_batches

    rows = [r for r in measured_batches(knowledge) if r["workload"] == job.model_id]
    if not rows:
        return None
    full = ("fp32", "tf32")
    same_precision = [r for r in rows if (r["precision"] in full) == (precision in full)]
    rows = same_precision or rows
    exact = [r for r in rows if r["gpu"] == gpu.id]
    if exact:
        return int(max(r["batch_per_gpu"] or 1 for r in exact))
    by_gpu = {g.id: g for g in knowledge.gpus}
    nearest = min(
        rows, key=lambda r: abs((by_gpu[r["gpu"]].memory_gb if r["gpu"] in by_gpu else 0) - gpu.memory_gb)
    )
    return int(nearest["batch_per_gpu"] or 1)
