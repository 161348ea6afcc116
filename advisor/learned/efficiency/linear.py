"""Provides the LLM efficiency model: a linear model of log efficiency on a handful of physical inputs, read
as plain numbers (pure Python at predict time; fitted and chosen by advisor/learned/efficiency/linear_fit.py).
The physical estimator, the speed of light x one constant, is the same form with every weight 0.

Why not the trees for LLM rows: held out by source, the gradient-boosted trees lose to a constant MFU (they
learn one harness's quirks from the 216 MosaicML rows); of the linear candidates, nested leave-one-source-out
keeps the one that generalises to an unseen source (on the shipped runs the physical estimator; see the
table of `gpu-advisor model evaluate`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.learned.efficiency.features import FEATURES

# The inputs, each a column of the feature vector except the last two: log(speed of light / throughput at 100%
# MFU), how far the core's physics already discounts below peak (memory-bound, bubble, exposed communication);
# and whether the run comes from a vendor's tuned benchmark table (1) or from a paper, a report or an
# independent team (0). Predictions set it to 0: the P50 is what a typical run sustains, and the vendor figure
# lies at the optimistic end of the interval.
INPUTS: tuple[str, ...] = (
    "fp8",
    "log_items_per_gpu_step",
    "comm_share",
    "recompute_full",
    "recompute_selective",
    "flash_attention",
    "compiled",
    "te_fp8",
    "stack_megatron",
    "log_params",
    "bytes_share",
    "log_peak_tflops",
    "compute_capability",
    "log_count",
    "log_tp",
    "log_pp",
    "moe",
    "log_sol_over_mfu",
    "vendor",
)
# Signs physics demands of a coefficient: more work per GPU step never lowers the efficiency; more exposed
# communication (a larger share, or a speed of light further below peak) and more GPUs never raise it.
SIGNS: dict[str, int] = {
    "log_items_per_gpu_step": 1,
    "comm_share": -1,
    "log_count": -1,
    "log_sol_over_mfu": 1,
}
TYPICAL = 0.0
"""The vendor input of a prediction: a typical run, not a vendor's tuned one."""
_COLUMN = {name: FEATURES.index(name) for name in INPUTS if name in FEATURES}
_BITS = FEATURES.index("precision_bits")
_COMPILED, _MEGATRON = FEATURES.index("compiled"), FEATURES.index("stack_megatron")
_NODES = FEATURES.index("nodes_log2")
# The servers a step spans count against what the step knows from here: its collectives are measured up to 8
# servers and NCCL's cost model beyond, without congestion or stragglers; 64 servers weigh as an eager stack.
SERVER_DOUBLINGS = 6.0


def eager(features: Sequence[float]) -> float:
    """1 where the stack runs its memory-bound operations eagerly (neither compiled or fused kernels nor a
    Megatron-style runtime), 0 elsewhere: the composed step prices norms, activations and rotary embeddings
    as fused kernels (physics/step_ops.py), so an eager stack's extra passes are what it does not know."""
    return 1.0 if features[_COMPILED] == 0.0 and features[_MEGATRON] == 0.0 else 0.0


def unknown(features: Sequence[float]) -> float:
    """What the composed step does not know of a plan, which the interval's width reads: an eager stack
    (eager()), plus the doublings of the servers it spans over SERVER_DOUBLINGS (one server: 0, 64: 1)."""
    return eager(features) + max(0.0, features[_NODES]) / SERVER_DOUBLINGS


def unknown_note(features: Sequence[float], widen: float) -> str:
    """Why a plan's interval is wider than a compiled one-server plan's (unknown()), or '' when it is not."""
    why = []
    if eager(features):
        why.append("an eager stack (the step prices fused norms and activations)")
    servers = 2.0 ** max(0.0, features[_NODES])
    if servers > 1.0:
        why.append(f"{servers:,.0f} servers (collectives between servers measured at 2-8, modelled beyond)")
    if widen <= 0.0 or not why:
        return ""
    return f"interval {1.0 + widen * unknown(features):.1f}x as wide: {' and '.join(why)}"


def llm_inputs(features: Sequence[float], log_sol_over_mfu: float, vendor: float = TYPICAL) -> list[float]:
    """The linear model's inputs, in INPUTS order, from one feature vector, the speed-of-light / MFU ratio and
    the vendor flag."""
    out = []
    for name in INPUTS:
        if name == "fp8":
            out.append(1.0 if features[_BITS] == 8 else 0.0)
        elif name == "log_sol_over_mfu":
            out.append(log_sol_over_mfu)
        elif name == "vendor":
            out.append(vendor)
        else:
            out.append(float(features[_COLUMN[name]]))
    return out


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class LinearLogModel:
    """intercept + sum(coef x (clip(x) - mean) / scale): inputs clipped to the training range (no linear
    extrapolation beyond the measured runs; the caller widens the interval there)."""

    inputs: tuple[str, ...]
    intercept: float
    coef: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    interval: tuple[float, float]
    """Log-residual P10 and P90 of held-out-source predictions, every source weighted equally."""
    meta: dict[str, Any]
    widen: float = 0.0
    """A plan's interval is (1 + widen x unknown()) times the interval: wider for an eager stack and for
    more servers; chosen with the interval by leave-one-source-out (llm_eval.levels_for)."""
    stack_offsets: dict[str, float] = field(default_factory=dict)
    """Log residual of a stack (its name in knowledge/training_stacks.toml) over the pooled estimate, shrunk
    toward 0 by the number of sources that measured it (linear_fit.stack_offsets); a stack without one: 0."""

    def stack_offset(self, stack: str) -> float:
        """The stack's own log residual over the pooled estimate (0 for a stack no run measured)."""
        return self.stack_offsets.get(stack, 0.0)

    def other_stacks(self, stack: str) -> tuple[float, float]:
        """How far below and above this stack's residual the other measured stacks' lie (log, <= 0 and
        >= 0): what a plan's interval spans besides its own when its stack was assumed, not stated."""
        own = self.stack_offset(stack)
        values = (0.0, *self.stack_offsets.values())
        return min(0.0, min(values) - own), max(0.0, max(values) - own)

    def interval_of(self, features: Sequence[float]) -> tuple[float, float]:
        """The log-residual P10 and P90 of one plan (its feature vector), as wide as what the step does not
        know of it (unknown())."""
        k = 1.0 + self.widen * unknown(features)
        return self.interval[0] * k, self.interval[1] * k

    def predict_log(self, x: Sequence[float]) -> float:
        """Predicted log efficiency."""
        total = self.intercept
        for v, c, m, s, lo, hi in zip(x, self.coef, self.mean, self.scale, self.lo, self.hi, strict=True):
            total += c * (min(max(v, lo), hi) - m) / s
        return total

    def outside(self, x: Sequence[float]) -> list[str]:
        """Inputs beyond the training range (clipped there)."""
        return [
            n
            for n, v, lo, hi in zip(self.inputs, x, self.lo, self.hi, strict=True)
            if v < lo - 1e-9 or v > hi + 1e-9
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters."""
        return {
            "inputs": list(self.inputs),
            "intercept": self.intercept,
            "coef": list(self.coef),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "lo": list(self.lo),
            "hi": list(self.hi),
            "interval": list(self.interval),
            "interval_widen": self.widen,
            "stack_offsets": dict(sorted(self.stack_offsets.items())),
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LinearLogModel:
        """Parse and check; ValueError when the parameters are not whole and finite."""
        coef, mean, scale, lo, hi = (
            tuple(float(v) for v in d[k]) for k in ("coef", "mean", "scale", "lo", "hi")
        )
        model = cls(
            tuple(d["inputs"]),
            float(d["intercept"]),
            coef,
            mean,
            scale,
            lo,
            hi,
            (float(d["interval"][0]), float(d["interval"][1])),
            dict(d.get("meta", {})),
            float(d.get("interval_widen", 0.0)),
            {str(k): float(v) for k, v in dict(d.get("stack_offsets", {})).items()},
        )
        n = len(INPUTS)
        if model.inputs != INPUTS or any(
            len(a) != n for a in (model.coef, model.mean, model.scale, model.lo, model.hi)
        ):
            raise ValueError(f"linear LLM model: expected the {n} inputs of this version")
        numbers = [
            model.intercept,
            *model.coef,
            *model.mean,
            *model.scale,
            *model.lo,
            *model.hi,
            *model.interval,
            model.widen,
            *model.stack_offsets.values(),
        ]
        if not all(math.isfinite(v) for v in numbers) or any(s <= 0 for s in model.scale) or model.widen < 0:
            raise ValueError(
                "linear LLM model: a parameter that is not a finite number (or a scale <= 0, a widening < 0)"
            )
        # Terms of a log efficiency: past |50| a stored file would overflow every prediction instead.
        terms = (model.intercept, *model.coef, *model.interval, model.widen, *model.stack_offsets.values())
        if any(abs(v) > 50.0 for v in terms):
            raise ValueError(
                "linear LLM model: an intercept, weight, interval or widening past |50| (not log efficiency)"
            )
        return model
