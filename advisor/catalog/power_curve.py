"""Provides the measured power-cap curve: training speed and power at a fraction of a GPU's power limit."""

from __future__ import annotations

import functools
import itertools
import statistics
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Annotated

from advisor.catalog.common import Source
from advisor.question.errors import KnowledgeError
from advisor.question.records import Check, PosFloat, validate

FILE = "power_curve.toml"


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class CurvePoint:
    """One GPU at one power limit: medians over the measured configurations, relative to its top limit."""

    gpu: str
    limit_w: PosFloat
    top_w: PosFloat
    fraction: Annotated[float, Check(gt=0, le=1)]
    throughput: PosFloat
    throughput_p10: PosFloat
    throughput_p90: PosFloat
    power: PosFloat
    configs: Annotated[int, Check(ge=1)]
    source: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class PowerCurve:
    """Measured sweeps of several GPUs; `at()` reads the curve at a cap fraction."""

    schema_version: int
    sources: dict[str, Source]
    point: tuple[CurvePoint, ...]

    def gpus(self) -> list[str]:
        """The GPUs measured."""
        return sorted({p.gpu for p in self.point})

    def _one(self, gpu: str, fraction: float, attr: str) -> float:
        pts = sorted((p for p in self.point if p.gpu == gpu), key=lambda p: p.fraction)
        if fraction <= pts[0].fraction:
            return float(getattr(pts[0], attr))
        for lo, hi in itertools.pairwise(pts):
            if lo.fraction <= fraction <= hi.fraction:
                w = (fraction - lo.fraction) / (hi.fraction - lo.fraction)
                return float(getattr(lo, attr) * (1 - w) + getattr(hi, attr) * w)
        return 1.0

    def at(self, fraction: float) -> tuple[float, float]:
        """(relative throughput, relative power) at `fraction` of the power limit: median over the measured
        GPUs, each interpolated linearly between its measured limits (1, 1 at the full limit)."""
        if fraction >= 1.0:
            return 1.0, 1.0
        gpus = self.gpus()
        speed = statistics.median(self._one(g, fraction, "throughput") for g in gpus)
        power = statistics.median(self._one(g, fraction, "power") for g in gpus)
        return min(1.0, speed), min(1.0, power)

    def source_ref(self) -> str:
        """The sources cited, as one line."""
        return "; ".join(f"{s.title} ({s.ref})" for s in self.sources.values())


@functools.cache
def load_power_curve() -> PowerCurve:
    """The shipped curve (knowledge/power_curve.toml), validated; KnowledgeError names the file and field."""
    raw = resources.files("knowledge").joinpath(FILE).read_bytes()
    try:
        curve: PowerCurve = validate(PowerCurve, tomllib.loads(raw.decode("utf-8")))
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise KnowledgeError(f"knowledge/{FILE}: {exc}") from None
    unknown = {p.source for p in curve.point} - set(curve.sources)
    if unknown:
        raise KnowledgeError(f"knowledge/{FILE}: unknown source key(s) {', '.join(sorted(unknown))}")
    return curve
