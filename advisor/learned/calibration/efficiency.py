"""Provides CalibratedEfficiency: any efficiency model with the user's runs applied on top (per GPU and
stack), so predict, recommend and the UI all give the calibrated figure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from advisor.catalog.run_store import default_profile
from advisor.learned.calibration.multiplier import (
    SHARE_WORDS,
    TRAINING_SCALES,
    Correction,
    correction,
    shifted,
)
from advisor.learned.calibration.points import step_shares, training_point
from advisor.learned.calibration.runs import RunSet, run_set
from advisor.learned.efficiency.base import EfficiencyModel, Interval, Query


def calibration_words(fix: Correction, profile: str, runs: int) -> str:
    """What an answer says of the calibration it applied."""
    where = "the same configuration" if fix.nearest < 0.05 else f"configuration distance {fix.nearest:.1f}"
    return (
        f"calibrated on {runs} of your runs (profile {profile}): x{fix.factor:.3f} on the uncalibrated "
        f"figure{part_words(fix)}, nearest run at {where}"
    )


def part_words(fix: Correction) -> str:
    """' (your cluster: compute time x0.85, exposed communication x1.40, per-step overhead +0.00 s)' for a
    training correction; '' for one without parts."""
    words = []
    for name, coef in fix.parts:
        if name == "inv_step_s":
            words.append(f"{SHARE_WORDS[name]} {-coef:+.2f} s")
        elif name in SHARE_WORDS:
            words.append(f"{SHARE_WORDS[name]} x{math.exp(-coef):.2f}")
    return f" (your cluster: {', '.join(words)})" if words else ""


def stale_words(stale: int, profile: str) -> str:
    """The note for runs left out because another model predicted their base."""
    return (
        f"{stale} run(s) of profile {profile} were calibrated against another model and are left out; "
        f"re-predict them with: gpu-advisor calibrate --refresh --profile {profile}"
    )


class CalibratedEfficiency:
    """The base model's intervals, moved by the multiplier of the user's runs on the same GPU and stack."""

    def __init__(self, base: EfficiencyModel) -> None:
        self.base = base

    @property
    def name(self) -> str:
        """The base model's name: the calibration is said per answer, in its notes."""
        return self.base.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def estimate(self, queries: Sequence[Query]) -> list[Interval]:
        """The base intervals, each calibrated where the profile has runs on its GPU and stack."""
        sets: dict[tuple[str, str, str], RunSet | None] = {}  # one read per profile, GPU and stack per call
        return [self._one(q, iv, sets) for q, iv in zip(queries, self.base.estimate(queries), strict=True)]

    def _one(self, q: Query, iv: Interval, sets: dict[tuple[str, str, str], RunSet | None]) -> Interval:
        job = q.job
        if not job.training:
            return iv
        profile = job.profile or default_profile(q.gpu.id, job.stack)
        key = (profile, q.gpu.id, job.stack)
        if key not in sets:
            sets[key] = run_set(profile, "training", q.gpu.id, job.stack, self.base.name)
        found = sets[key]
        if found is None:
            return iv
        pairs = found.ratios["throughput"]
        if not pairs:
            return Interval(iv.p10, iv.p50, iv.p90, note=_joined(iv.note, stale_words(found.stale, profile)))
        at = query_point(q, iv)
        fix = correction(at, pairs, "training", TRAINING_SCALES)
        assert fix is not None
        p10, p50, p90 = shifted(iv.p10, iv.p50, iv.p90, fix)
        note = calibration_words(fix, profile, len(pairs))
        if found.stale:
            note += "; " + stale_words(found.stale, profile)
        return Interval(p10, p50, p90, note=_joined(iv.note, note))


def _joined(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def query_point(q: Query, iv: Interval) -> dict[str, float]:
    """A plan's configuration and the parts of its base step (composed from operations), as the calibration
    reads them; the same figures a stored run's point keeps (advisor/answer/calibration_runs.py)."""
    job, step = q.job, q.step
    at = training_point(
        params=job.params,
        seq_len=job.seq_len,
        kind=job.kind,
        precision=q.layout.precision,
        count=q.layout.count,
        layout=q.layout,
    )
    if step is None or step.ops is None:  # a step not composed from operations: all compute (as stored)
        return at
    parts = [(p.op, p.seconds) for p in step.ops.parts]
    return {**at, **step_shares(parts, step.total_s / iv.p50 if iv.p50 > 0 else 0.0)}
