"""Provides LearnedEfficiency: the benchmark-trained model, read as plain parameters (no scikit-learn)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.loader import Knowledge
from advisor.catalog.stacks import Stack, shipped_stacks, stacks_of
from advisor.catalog.userdata import data_dir, read_stored
from advisor.learned.efficiency.base import Interval, Query
from advisor.learned.efficiency.bounds import MIN_HALF, Bounds, Where, soft_min
from advisor.learned.efficiency.features import FEATURES, family_of, query_features
from advisor.learned.efficiency.gbdt import ExportedModel, check_exported
from advisor.learned.efficiency.linear import TYPICAL, LinearLogModel, Plan, llm_inputs, unknown_note
from advisor.learned.efficiency.prior import PriorEfficiency
from advisor.physics.speed import (
    NON_LLM_STACKS,
    peak_flops,
)  # NON_LLM_STACKS: an LLM measured there is not an LLM stack's run

ARTIFACT = "efficiency_model.json"
LEARNED_REGIMES = ("llm-pretrain", "llm-finetune", "other-train")
# Beyond the measured range the interval is widened: the physics still scales, the learned part is a guess.
EXTRAPOLATION_WIDEN = 1.5
# Without bounds in the artifact (an older one): only the speed of light bounds the interval.
NO_BOUNDS = Bounds({}, {}, {})
_KIND = FEATURES.index("kind_code")
_PARAMS = FEATURES.index("log_params")
_TOKENS = FEATURES.index("log_items_per_gpu_step")
_COUNT = FEATURES.index("log_count")
TRAIT_WORDS = (
    ("FlashAttention", "no FlashAttention"),
    ("compiled or fused kernels", "eager kernels"),
    ("Transformer Engine FP8", "no Transformer Engine FP8"),
    (
        "a Megatron-style runtime (sequence-parallel TP, overlapped communication)",
        "no Megatron-style runtime",
    ),
)


class LearnedEfficiency:
    """Efficiency from the learned model for training regimes it was fitted on (LLM runs: the linear model at
    the typical family, with its stack's own residual; other runs: the trees), bounded
    (advisor/learned/efficiency/bounds.py); LoRA and QLoRA on a step not composed from measured operations
    scale the fine-tuning prediction by their priors' ratio; inference is served by advisor/serving."""

    def __init__(
        self,
        model: ExportedModel,
        assumptions: Assumptions,
        fallback: PriorEfficiency,
        calibration_rows: int = 0,
        stacks: dict[str, Stack] | None = None,
    ) -> None:
        self.model = model
        self.assumptions = assumptions
        self.fallback = fallback
        self.calibration_rows = calibration_rows
        self.stacks = stacks if stacks is not None else shipped_stacks()
        self.bounds = model.bounds or NO_BOUNDS
        cv = model.meta.get("llm_error")
        self.layout_margin = cv if isinstance(cv, float) else None
        """The held-out error a layout must beat the simplest one by (advisor/search/training.py)."""
        detail = f"; held-out-source LLM median error {cv:.0%}" if isinstance(cv, float) else ""
        how = "gradient-boosted trees"
        if model.linear:
            how = f"LLM runs: {llm_how(model.linear)}; other runs: {how}"
        self.name = (
            f"learned from {model.rows:,} measured runs ({how}; the stack's traits, layout "
            f"and batch are inputs{detail})"
        )
        if calibration_rows:
            self.name += f" + calibration on {calibration_rows} of your runs"
        self.extrapolated: list[str] = []

    def _stack(self, stack: str) -> Stack | None:
        return self.stacks.get(stack) or self.stacks.get("fsdp")

    def stack_note(self, stack: str) -> str:
        """Why the stack changes the figure: the traits the model reads for it."""
        spec = self._stack(stack)
        if spec is None:
            return ""
        words = [yes if on else no for on, (yes, no) in zip(spec.traits(), TRAIT_WORDS, strict=True)]
        return f"; stack {stack}: {', '.join(words)}"

    def estimate(self, queries: Sequence[Query]) -> list[Interval]:
        """One interval per query."""
        return [self._one(q) for q in queries]

    def _one(self, q: Query) -> Interval:
        regime = q.regime
        spec = self._stack(q.job.stack)
        if regime not in (*LEARNED_REGIMES, "lora", "qlora") or spec is None:
            return self.fallback.prior(regime)
        x = query_features(q, self.assumptions, spec.traits())
        if x is None or q.step is None:
            return self.fallback.prior(regime)
        sol = q.step.items / q.step.total_s
        mfu_sol = (peak_flops(q.gpu, q.layout.precision) or 1.0) * q.layout.count / q.job.train_flops_per_item
        llm = family_of(x[_KIND]) == "llm" and q.job.stack not in NON_LLM_STACKS
        family = "llm" if llm else "other"
        point: tuple[float, ...] = ()
        if llm and self.model.linear is not None:
            inputs = llm_inputs(x, math.log(sol / mfu_sol), TYPICAL)
            beyond = self.model.linear.outside(inputs)
            log50 = self.model.linear.predict_log(inputs) + self.model.linear.stack_offset(q.job.stack)
            plan = Plan(spec.runs_as or q.job.stack, q.gpu.id, q.job.kind != "pretrain", q.job.seq_len)
            offsets = self.model.linear.interval_of(x, plan)
            if q.job.config.stack is None:  # assumed, not stated
                below, above = self.model.linear.other_stacks(q.job.stack)
                offsets = (offsets[0] + below, offsets[1] + above)
            point = (x[_PARAMS], math.log(max(q.job.seq_len, 1)), x[_TOKENS], x[_COUNT])
        else:
            beyond = self.model.outside(x)
            log50 = self.model.predict_log(x)
            offsets = self.model.interval.get(family, self.model.interval["all"])
        if beyond:
            self.extrapolated = sorted(set(self.extrapolated) | set(beyond))
        composed = llm and q.step.ops is not None
        if regime in ("lora", "qlora") and not composed:
            log50 += self._lora_shift(regime)
        where = Where(
            family, q.gpu.architecture, q.layout.precision, math.log(mfu_sol / sol), point, composed
        )
        widen = EXTRAPOLATION_WIDEN if beyond else 1.0
        p10, p50, p90, note = self.bounds.interval(log50, offsets, where, widen)
        if llm and self.model.linear is not None:
            note = "; ".join(filter(None, (note, self._unknown(x, plan), self._typed(q))))
        if composed:
            p10, p50, p90 = below_speed_of_light(p10, p50, p90, q.step.total_s / q.step.sol_s)
        return Interval(p10, p50, p90, note=note)

    def _unknown(self, x: Sequence[float], plan: Plan) -> str:
        """Why the plan's interval is wider than a compiled one-server plan's by measured runs, or ''."""
        linear = self.model.linear
        assert linear is not None
        return unknown_note(x, linear.widen, linear.widen_far, linear.far(x, plan))

    def _typed(self, q: Query) -> str:
        """Why a plan whose stack was assumed has a wider interval, or ''."""
        if self.model.linear is None or q.job.config.stack is not None:
            return ""
        below, above = self.model.linear.other_stacks(q.job.stack)
        if below == 0.0 and above == 0.0:
            return ""
        return (
            f"stack {q.job.stack} assumed: the interval also spans the other measured stacks' residuals "
            f"({math.exp(below):.2f}x-{math.exp(above):.2f}x)"
        )

    def _lora_shift(self, regime: str) -> float:
        """log(LoRA prior / full fine-tuning prior): the learned figure is for full training. Only where the
        step is not composed from measured operations: a composed step already leaves out the frozen weights'
        gradient GEMMs (physics/step_ops.py `frozen`) and prices QLoRA's dequantisation, and its residual,
        fitted on full training, is the stack's, so the priors' ratio on top would count them twice."""
        prior, ft = self.fallback.prior(regime), self.fallback.prior("llm-finetune")
        return math.log(prior.p50 / ft.p50)


def below_speed_of_light(p10: float, p50: float, p90: float, limit: float) -> tuple[float, float, float]:
    """A residual interval whose throughput stays below the speed of light (limit: composed step / speed of
    light), bounded smoothly as the caps are (the P90 below it, the P50 below it less MIN_HALF)."""
    factor = soft_min(p90, limit) / p90
    low = soft_min(p50, limit * math.exp(-MIN_HALF)) / p50
    return p10 * low, p50 * low, p90 * factor


def llm_how(linear: LinearLogModel) -> str:
    """What the shipped LLM estimator is, in words."""
    if linear.meta.get("free") is not None:
        which = "the median" if linear.meta.get("median") else "one fitted"
        stacks = ", each stack's own partially pooled by its sources," if linear.stack_offsets else ""
        return (
            f"the plan's speed of light x {which} efficiency of the measured runs{stacks} chosen over a "
            "ridge on physical inputs by held-out sources"
        )
    return (
        "Huber ridge on physical inputs, P50 at what papers, reports and independent teams sustain, vendor "
        "tables at the optimistic end"
    )


def calibration_dir() -> Path:
    """Where `gpu-advisor calibrate` keeps the user's runs and refitted model."""
    return data_dir() / "calibration"


def _parse_user_model(text: str) -> ExportedModel:
    return check_exported(ExportedModel.from_json(text), FEATURES)


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int, size: int) -> ExportedModel | None:
    # A model that is not whole is moved aside with a warning (read_stored), so predictions fall back to the
    # shipped model instead of crashing until `calibrate --reset`.
    return read_stored(Path(path), _parse_user_model)


def load_learned(knowledge: Knowledge, fallback: PriorEfficiency) -> LearnedEfficiency | None:
    """The user's calibrated model when there is one, else the shipped one; None when neither loads."""
    user = calibration_dir() / ARTIFACT
    try:
        stat = user.stat()
    except OSError:
        stat = None
    if stat is not None:
        model = _read(str(user), stat.st_mtime_ns, stat.st_size)
        if model is not None:
            return LearnedEfficiency(
                model,
                knowledge.assumptions,
                fallback,
                int(model.meta.get("calibration_rows", 0)),
                stacks_of(knowledge),
            )
    try:
        text = knowledge.root.joinpath(ARTIFACT).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    model = ExportedModel.from_json(text)
    return LearnedEfficiency(model, knowledge.assumptions, fallback, stacks=stacks_of(knowledge))
