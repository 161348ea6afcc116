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
_MOE = FEATURES.index("moe")
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


# The longest sequence the attention table measured (knowledge/operations/attention.csv: 512-16,384 tokens);
# beyond it the step extrapolates attention's rate.
MEASURED_SEQ = 16_384
# A stack measured by fewer sources than this is far from what was measured: its own residual is shrunk to
# nothing (linear_fit.stack_offsets) or is one source's.
STACK_SOURCES = 2


@dataclass(frozen=True, slots=True, repr=False)
class Plan:
    """What the interval's distance term reads of a plan besides its features: its --stack (a data-only
    stack's runs_as), its GPU, whether it fine-tunes, its sequence length."""

    stack: str = ""
    gpu: str = ""
    finetune: bool = False
    seq_len: int = 0


def plan_of(sample: Any) -> Plan:
    """What distance() reads of a measured run (a samples.Sample) besides its features: its stack as the
    --stack it is answered as (a data-only stack's runs_as), its GPU, fine-tuning, its sequence."""
    row = sample.row
    stack = getattr(sample, "runs_as", "") or getattr(row, "stack", "")
    kind = getattr(row, "kind", "pretrain")
    return Plan(stack, getattr(row, "gpu", ""), kind != "pretrain", getattr(row, "seq_len", 0))


def distance(features: Sequence[float], plan: Plan, stack_sources: int, gpu_measured: bool) -> float:
    """How far a plan lies from what the training runs measured, one for each: a stack fewer than
    STACK_SOURCES sources measured, a GPU no training run used (its operation tables a fallback or
    another GPU's), fine-tuning (the training runs are mostly pre-training), a mixture of experts, a sequence
    past the attention table's MEASURED_SEQ. On the development sets and held out by source, the runs with
    each scatter further around the P50 (docs/step-model.md, "The interval's width")."""
    return float(
        (bool(plan.stack) and stack_sources < STACK_SOURCES)
        + (bool(plan.gpu) and not gpu_measured)
        + plan.finetune
        + (features[_MOE] > 0.0)
        + (plan.seq_len > MEASURED_SEQ)
    )


def unknown_note(
    features: Sequence[float], widen: float, far: float = 0.0, why_far: Sequence[str] = ()
) -> str:
    """Why a plan's interval is wider than a compiled one-server plan's near what was measured (unknown();
    far: the widening for its distance, why_far: what of it the training runs did not measure), or ''."""
    why = []
    if widen > 0.0 and eager(features):
        why.append("an eager stack (the step prices fused norms and activations)")
    servers = 2.0 ** max(0.0, features[_NODES])
    if widen > 0.0 and servers > 1.0:
        why.append(f"{servers:,.0f} servers (collectives between servers measured at 2-8, modelled beyond)")
    if far > 0.0:
        why.extend(why_far)
    if not why:
        return ""
    k = 1.0 + widen * unknown(features) + far * len(why_far)
    return f"interval {k:.1f}x as wide: {' and '.join(why)}"


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

    widen_far: float = 0.0
    """A plan's interval is widen_far x distance() wider again (times the interval): how far it lies from what
    the training runs measured (chosen with the interval, llm_eval.levels_for)."""
    stack_sources: dict[str, int] = field(default_factory=dict)
    """The sources that measured each --stack the training runs were answered as."""
    measured_gpus: tuple[str, ...] = ()
    """The GPUs of the training runs (an older artefact: none, and the distance term is not read)."""

    def far(self, features: Sequence[float], plan: Plan) -> list[str]:
        """What of a plan the training runs did not measure (distance()'s terms, in words)."""
        if not self.measured_gpus:
            return []
        why = []
        if plan.stack and self.stack_sources.get(plan.stack, 0) < STACK_SOURCES:
            n = self.stack_sources.get(plan.stack, 0)
            why.append(f"the {plan.stack} stack ({n} source{'' if n == 1 else 's'} measured it)")
        if plan.gpu and plan.gpu not in self.measured_gpus:
            why.append(f"{plan.gpu} (no measured training run)")
        if plan.finetune:
            why.append("fine-tuning (the measured runs are mostly pre-training)")
        if features[_MOE] > 0.0:
            why.append("a mixture of experts")
        if plan.seq_len > MEASURED_SEQ:
            why.append(f"a {plan.seq_len:,}-token sequence (attention measured to {MEASURED_SEQ:,})")
        return why

    def stack_offset(self, stack: str) -> float:
        """The stack's own log residual over the pooled estimate (0 for a stack no run measured)."""
        return self.stack_offsets.get(stack, 0.0)

    def other_stacks(self, stack: str) -> tuple[float, float]:
        """How far below and above this stack's residual the other measured stacks' lie (log, <= 0 and
        >= 0): what a plan's interval spans besides its own when its stack was assumed, not stated."""
        own = self.stack_offset(stack)
        values = (0.0, *self.stack_offsets.values())
        return min(0.0, min(values) - own), max(0.0, max(values) - own)

    def interval_of(self, features: Sequence[float], plan: Plan | None = None) -> tuple[float, float]:
        """The log-residual P10 and P90 of one plan (its feature vector, what else it is), as wide as what the
        step does not know of it (unknown()) and as far as it lies from what was measured (far())."""
        k = 1.0 + self.widen * unknown(features)
        if plan is not None:
            k += self.widen_far * len(self.far(features, plan))
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
            "interval_widen_far": self.widen_far,
            "stack_sources": dict(sorted(self.stack_sources.items())),
            "measured_gpus": list(self.measured_gpus),
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
            float(d.get("interval_widen_far", 0.0)),
            {str(k): int(v) for k, v in dict(d.get("stack_sources", {})).items()},
            tuple(str(v) for v in d.get("measured_gpus", ())),
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
            model.widen_far,
            *model.stack_offsets.values(),
        ]
        widths = (model.widen, model.widen_far)
        if not all(math.isfinite(v) for v in numbers) or any(s <= 0 for s in model.scale) or min(widths) < 0:
            raise ValueError(
                "linear LLM model: a parameter that is not a finite number (or a scale <= 0, a widening < 0)"
            )
        # Terms of a log efficiency: past |50| a stored file would overflow every prediction instead.
        terms = (model.intercept, *model.coef, *model.interval, *widths, *model.stack_offsets.values())
        if any(abs(v) > 50.0 for v in terms):
            raise ValueError(
                "linear LLM model: an intercept, weight, interval or widening past |50| (not log efficiency)"
            )
        return model
