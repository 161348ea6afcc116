"""Provides goodput(): expected interruptions of a training run, its Young/Daly checkpoint interval, and the
share of wall time that is useful work once checkpoints, lost work and restarts are paid."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions
from advisor.job.resolve import Job


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Goodput:
    """Interruptions and checkpointing of one plan; `fraction` = useful time / wall time."""

    mtbf_h: float
    """Mean time between interruptions of the whole job."""
    checkpoint_s: float
    """Time to write one checkpoint."""
    interval_h: float
    """Compute time between checkpoints (Daly's optimum)."""
    restart_h: float
    fraction: float
    interruptions: float = 0.0
    """Expected interruptions over the run (0 until the run's length is known)."""

    def wall_hours(self, useful_hours: float) -> float:
        """Wall time of `useful_hours` of work, with checkpoints, lost work and restarts."""
        return useful_hours / self.fraction

    def over(self, useful_hours: float) -> Goodput:
        """The same plan with the expected interruptions of a run of `useful_hours`."""
        wall = self.wall_hours(useful_hours)
        return Goodput(
            self.mtbf_h, self.checkpoint_s, self.interval_h, self.restart_h, self.fraction, wall / self.mtbf_h
        )


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum compute time between checkpoints (Daly 2006, FGCS 22(3) 303-312, eq. 37):
    sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta for delta < 2M, else M.

    The series is in xi = delta / 2M, hence the cut-off at delta = 2M (not M/2). Checked against the
    paper's Figs. 3-5: M = 24 h, 6 h, 15 min with delta = 5 min give 117, 57 and 9.1 min, which the
    first-order sqrt(2 delta M) - delta (115, 55, 7.2 min) does not."""
    if checkpoint_s >= 2.0 * mtbf_s:
        return mtbf_s
    xi = checkpoint_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s) * (1.0 + math.sqrt(xi) / 3.0 + xi / 9.0) - checkpoint_s


def goodput_fraction(checkpoint_s: float, interval_s: float, restart_s: float, mtbf_s: float) -> float:
    """Useful share of wall time, first order: each segment of work tau pays one checkpoint delta, and each
    interruption (every M seconds) loses half a segment plus the restart."""
    waste = (
        checkpoint_s / (interval_s + checkpoint_s) + ((interval_s + checkpoint_s) / 2.0 + restart_s) / mtbf_s
    )
    return max(0.01, 1.0 - waste)


def checkpoint_bytes(job: Job) -> float:
    """Bytes one checkpoint writes: 16-bit weights, fp32 master copy and optimizer states of what trains."""
    if job.kind in ("lora", "qlora"):
        return job.trainable_params * 2.0
    states = {
        "adamw": 8.0,
        "adamw-8bit": 2.0,
        "paged-adamw": 8.0,
        "paged-adamw-8bit": 2.0,
        "sgd": 4.0,
        "lion": 4.0,
    }
    master = 4.0 if job.master_weights else 0.0
    return job.params * (2.0 + master + states.get(job.optimizer, 0.0))


def goodput(job: Job, count: int, a: Assumptions) -> Goodput:
    """Goodput of a job on `count` GPUs (sourced failure rate and storage bandwidth per GPU)."""
    g = a.goodput
    mtbf_h = 1.0 / (g["interruptions_per_gpu_hour"].value * count)
    ckpt_s = checkpoint_bytes(job) / (g["storage_gbs_per_gpu"].value * 1e9 * count)
    interval_s = daly_interval_s(ckpt_s, mtbf_h * 3600.0)
    restart_h = g["restart_h"].value
    fraction = goodput_fraction(ckpt_s, interval_s, restart_h * 3600.0, mtbf_h * 3600.0)
    return Goodput(mtbf_h, ckpt_s, interval_s / 3600.0, restart_h, fraction)
