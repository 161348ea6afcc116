"""Provides the bounds of a predicted efficiency interval: never above the highest efficiency measured on the
same GPU generation and precision, shrunk toward the constant-MFU prior outside the measured range, and always
two-sided (a smooth bound, never a clamp a P50 could sit on)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PRECISION_CLASS = {"fp8": "fp8", "bf16": "16-bit", "fp16": "16-bit", "tf32": "32-bit", "fp32": "32-bit"}
# How far beyond the measured range (natural log of the ratio) a prediction is all prior: a model 4x larger
# than any measured, a count 4x beyond, ... Halfway there it is half prior.
SHRINK_SPAN = math.log(4.0)
# The largest cap a file may hold: advisor/learned/efficiency/evaluate.py's RESIDUAL_CAP.
CAP_LIMIT = 3.0
# The interval keeps at least this much (log) on each side of its P50.
MIN_HALF = 0.05
# Sharpness of the smooth bound: min(x, cap) ~ (x^-k + cap^-k)^(-1/k); at x = cap it gives 0.92 cap.
SOFT_K = 8.0
# Below this factor the cap has moved the interval by more than 2%: the output says it binds.
BINDS = 0.98
# The range dimensions: the features a measured run sets, whose far side is the prior's.
RANGE_DIMENSIONS = ("log_params", "log_seq", "log_tokens_per_micro_batch", "log_count")


@dataclass(frozen=True, slots=True, repr=False)
class Cap:
    """The highest efficiency measured on one GPU generation and precision class, and which run it was."""

    efficiency: float
    run: str


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Where:
    """What the bounds read of one plan besides its log efficiency."""

    family: str
    """'llm' or 'other' (each has its own caps)."""
    generation: str
    precision: str
    log_mfu_over_sol: float
    """log(throughput at 100% MFU / speed of light): the constant-MFU prior's log efficiency less log(MFU)."""
    point: tuple[float, ...] = ()
    """The plan's RANGE_DIMENSIONS values (empty: no range check)."""
    composed: bool = False
    """Whether the efficiency is a residual against a step composed from measured operations: then the
    prior beyond the measured range is that step at the typical residual, not the constant MFU."""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Bounds:
    """Caps per family, generation and precision class; the typical MFU per precision class; the measured
    range."""

    caps: dict[str, Cap]
    prior_mfu: dict[str, float]
    ranges: dict[str, tuple[float, float]]
    prior_residual: dict[str, float] = field(default_factory=dict)
    """The typical runs' median measured / composed step per precision class (composed plans' prior)."""
    p50_caps: dict[str, Cap] = field(default_factory=dict)
    """The highest efficiency of the runs the memory model lets fit, which bounds the P50 only (its P10
    with it): the P90 stays under caps, so a plan near this bound keeps its interval's upper side."""

    def cap(self, where: Where, caps: dict[str, Cap] | None = None) -> tuple[float, str]:
        """The efficiency bound of a plan and the sentence that names its run (caps: self.caps unless
        given)."""
        caps = self.caps if caps is None else caps
        pc = PRECISION_CLASS.get(where.precision, "16-bit")
        # Against a composed step the figure is a run's speed over its own composed step (a residual, which
        # passes 100% where the run ran faster than the step model composes it), not a share of the speed
        # of light: the sentence says which, so that '185%' does not read as an efficiency.
        what = (
            "the highest efficiency (speed over its own composed step)"
            if where.composed
            else "the highest efficiency"
        )
        hit = caps.get(f"{where.family}|{where.generation}|{pc}")
        if hit is not None:
            return hit.efficiency, (
                f"{what} measured on {where.generation} at {pc}, {hit.efficiency:.0%}: {hit.run}"
            )
        same = [c for k, c in caps.items() if k.startswith(f"{where.family}|") and k.endswith(f"|{pc}")]
        if not same:
            return 1.0, "the speed of light"
        top = max(same, key=lambda c: c.efficiency)
        return top.efficiency, (
            f"{what} measured at {pc} on any GPU ({where.generation} has no run), "
            f"{top.efficiency:.0%}: {top.run}"
        )

    def beyond(self, point: Sequence[float]) -> tuple[float, float]:
        """How far (log) a plan lies beyond the measured range: (model size, sequence, batch) and count."""
        out = []
        for name, v in zip(RANGE_DIMENSIONS, point, strict=False):
            lo, hi = self.ranges.get(name, (v, v))
            out.append(max(0.0, lo - v, v - hi))
        return sum(out[:3]), (out[3] if len(out) > 3 else 0.0)

    def shrink(self, log50: float, where: Where) -> tuple[float, float]:
        """The log P50 shrunk toward the constant-MFU prior beyond the measured range, and how far (0-1):
        both ways beyond the model size, sequence and batch; beyond the count only downward, so that per-GPU
        throughput never rises with the count."""
        if not where.point:
            return log50, 0.0
        pc = PRECISION_CLASS.get(where.precision, "16-bit")
        residual = self.prior_residual.get(pc) or self.prior_residual.get("16-bit")
        mfu = self.prior_mfu.get(pc) or self.prior_mfu.get("16-bit")
        if where.composed and residual is not None:
            prior = math.log(residual)  # shrunk to the physical model: the composed step, typical residual
        elif mfu is None:
            return log50, 0.0
        else:
            prior = math.log(mfu) + where.log_mfu_over_sol
        d_shape, d_count = self.beyond(where.point)
        w = min(1.0, d_shape / SHRINK_SPAN)
        out = (1.0 - w) * log50 + w * prior
        wc = min(1.0, d_count / SHRINK_SPAN)
        out = min(out, (1.0 - wc) * out + wc * prior)
        return out, min(1.0, w + wc)

    def interval(
        self, log50: float, offsets: tuple[float, float], where: Where, widen: float = 1.0
    ) -> tuple[float, float, float, str]:
        """(p10, p50, p90) efficiency and what bounds it: the P50 shrunk outside the measured range, the
        interval widened there, then bounded smoothly by the cap: the P90 below the cap, the P50 (and the
        P10 with it) below the cap less MIN_HALF, so that the P50 stays strictly below the P90. Only what
        nears the cap moves: a P50 far below it keeps its figure however high its P90."""
        log50, far = self.shrink(log50, where)
        widen *= 1.0 + 0.5 * far
        lo = min(offsets[0] * widen, -MIN_HALF)
        hi = max(offsets[1] * widen, MIN_HALF)
        p10, p50, p90 = math.exp(log50 + lo), math.exp(log50), math.exp(log50 + hi)
        cap, why = self.cap(where)
        factor = soft_min(p90, cap) / p90
        cap50, why50 = self.cap(where, self.p50_caps) if self.p50_caps else (cap, why)
        if cap50 >= cap:
            cap50, why50 = cap, why
        low = soft_min(p50, cap50 * math.exp(-MIN_HALF)) / p50
        if low < BINDS and factor >= BINDS:
            why = (
                f"{why}; its P50 by {why50.replace('the highest efficiency', 'the highest of runs that fit')}"
            )
        notes = []
        if where.point:  # an LLM plan: always say what bounds it
            binds = min(factor, low) < BINDS
            if where.composed:
                # The plan's own figure in the cap's unit (P50 speed over its composed step); a cap above 100%
                # is a run faster than the step model composes it, which bounds nothing near this plan.
                over = (
                    "; a run above 100% ran faster than the step model composes it, so the bound does not "
                    "bind here"
                    if cap > 1.0 and not binds
                    else ""
                )
                verb = "bounded by" if binds else "below"
                notes.append(f"speed {p50 * low:.0%} of its composed step, {verb} {why}{over}")
            else:
                notes.append(f"efficiency {'bounded by' if binds else 'below'} {why}")
        elif min(factor, low) < BINDS:
            notes.append(f"efficiency bounded by {why}")
        if far > 0.0:
            prior = (
                "the composed step at the typical residual" if where.composed else "the constant-MFU prior"
            )
            notes.append(
                f"outside the measured runs' range (model size, sequence, batch or count): shrunk {far:.0%} "
                f"of the way to {prior}, interval widened"
            )
        return p10 * low, p50 * low, p90 * factor, "; ".join(notes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters."""
        return {
            "caps": _caps_dict(self.caps),
            "prior_mfu": dict(sorted(self.prior_mfu.items())),
            "ranges": {k: list(v) for k, v in sorted(self.ranges.items())},
            "prior_residual": dict(sorted(self.prior_residual.items())),
            **({"p50_caps": _caps_dict(self.p50_caps)} if self.p50_caps else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Bounds:
        """Parse and check; ValueError when a figure is not a finite positive number."""
        caps = {k: Cap(float(v[0]), str(v[1])) for k, v in d["caps"].items()}
        p50_caps = {k: Cap(float(v[0]), str(v[1])) for k, v in d.get("p50_caps", {}).items()}
        prior = {k: float(v) for k, v in d["prior_mfu"].items()}
        ranges = {k: (float(v[0]), float(v[1])) for k, v in d["ranges"].items()}
        residual = {k: float(v) for k, v in d.get("prior_residual", {}).items()}
        if not all(math.isfinite(v) and 0 < v <= CAP_LIMIT for v in residual.values()):
            raise ValueError(f"bounds: a prior residual outside (0, {CAP_LIMIT:g}]")
        # A cap against a composed step is a residual (measured / composed), which may pass 1.
        every = (*caps.values(), *p50_caps.values())
        if not all(math.isfinite(c.efficiency) and 0 < c.efficiency <= CAP_LIMIT for c in every):
            raise ValueError(f"bounds: a cap outside (0, {CAP_LIMIT:g}]")
        if not all(math.isfinite(v) and 0 < v <= 1 for v in prior.values()):
            raise ValueError("bounds: a prior MFU outside (0, 1]")
        if not all(math.isfinite(a) and math.isfinite(b) and a <= b for a, b in ranges.values()):
            raise ValueError("bounds: a range that is not finite and ordered")
        return cls(caps, prior, ranges, residual, p50_caps)


def _caps_dict(caps: dict[str, Cap]) -> dict[str, list[Any]]:
    return {k: [c.efficiency, c.run] for k, c in sorted(caps.items())}


def soft_min(x: float, cap: float) -> float:
    """A smooth min(x, cap) that stays below cap: (x^-k + cap^-k)^(-1/k), x first held at 2 cap so that far
    above the cap the result still rounds below it (0.9995 cap)."""
    x = min(x, 2.0 * cap)
    return float((x**-SOFT_K + cap**-SOFT_K) ** (-1.0 / SOFT_K))
