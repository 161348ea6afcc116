"""Provides LearnedEfficiency: the benchmark-trained model, read as plain parameters (no scikit-learn)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.loader import Knowledge
from advisor.catalog.userdata import data_dir, read_stored
from advisor.learned.efficiency.base import Interval, Query
from advisor.learned.efficiency.dataset import family_of
from advisor.learned.efficiency.features import FEATURES, LLM_STACKS, query_features, stack_traits
from advisor.learned.efficiency.gbdt import ExportedModel, check_exported, efficiency_interval
from advisor.learned.efficiency.linear import llm_inputs
from advisor.learned.efficiency.prior import PriorEfficiency
from advisor.physics.speed import peak_flops

ARTIFACT = "efficiency_model.json"
LEARNED_REGIMES = ("llm-pretrain", "llm-finetune", "other-train")
# Beyond the measured range the interval is widened: the physics still scales, the learned part is a guess.
EXTRAPOLATION_WIDEN = 1.5


class LearnedEfficiency:
    """Efficiency from the gradient-boosted model for training regimes it was fitted on; LoRA and QLoRA scale
    the fine-tuning prediction by their priors' ratio; inference is served by advisor/serving."""

    def __init__(
        self,
        model: ExportedModel,
        assumptions: Assumptions,
        fallback: PriorEfficiency,
        calibration_rows: int = 0,
    ) -> None:
        self.model = model
        self.assumptions = assumptions
        self.fallback = fallback
        self.calibration_rows = calibration_rows
        cv = model.meta.get("loso_llm_median_ape")
        detail = f"; held-out-source LLM median error {cv:.0%}" if isinstance(cv, float) else ""
        how = (
            "LLM runs: Huber ridge on physical inputs, other runs: gradient-boosted trees"
            if model.linear
            else "gradient-boosted trees"
        )
        self.name = (
            f"learned from {model.rows:,} measured runs ({how}; the stack's traits, layout "
            f"and batch are inputs{detail})"
        )
        if calibration_rows:
            self.name += f" + calibration on {calibration_rows} of your runs"
        self.extrapolated: list[str] = []

    def stack_note(self, stack: str) -> str:
        """Why the stack changes the figure: the traits the model reads for it."""
        fused, megatron = stack_traits(stack)
        kernels = "fused kernels" if fused else "eager kernels (no fused/compiled kernels)"
        runtime = (
            "Megatron-style runtime (sequence-parallel TP, overlapped communication)"
            if megatron
            else "no Megatron-style runtime"
        )
        return f"; stack {stack}: {kernels}, {runtime}"

    def estimate(self, queries: Sequence[Query]) -> list[Interval]:
        """One interval per query."""
        out: list[Interval] = []
        ft = self.fallback.prior("llm-finetune")
        kind = FEATURES.index("kind_code")
        for q in queries:
            regime = q.regime
            if regime not in (*LEARNED_REGIMES, "lora", "qlora"):
                out.append(self.fallback.prior(regime))
                continue
            x = query_features(q, self.assumptions)
            if x is None:
                out.append(self.fallback.prior(regime))
                continue
            beyond = self.model.outside(x)
            widen = EXTRAPOLATION_WIDEN if beyond else 1.0
            if beyond:
                self.extrapolated = sorted(set(self.extrapolated) | set(beyond))
            family = "llm" if family_of(x[kind]) == "llm" and q.job.stack in LLM_STACKS else "other"
            if family == "llm" and self.model.linear is not None:
                p10, p50, p90 = self._linear(q, x)
            else:
                p10, p50, p90 = efficiency_interval(self.model, x, family, widen)
            if regime in ("lora", "qlora"):
                prior = self.fallback.prior(regime)
                p10, p50, p90 = p10 * prior.p10 / ft.p10, p50 * prior.p50 / ft.p50, p90 * prior.p90 / ft.p90
            out.append(Interval(p10, p50, min(p90, 1.0)))
        return out

    def _linear(self, q: Query, x: list[float]) -> tuple[float, float, float]:
        """(p10, p50, p90) of an LLM plan from the linear model; its interval widened beyond the measured
        range."""
        linear = self.model.linear
        assert linear is not None and q.step is not None
        sol = q.step.items / q.step.total_s
        mfu_sol = (peak_flops(q.gpu, q.layout.precision) or 1.0) * q.layout.count / q.job.train_flops_per_item
        inputs = llm_inputs(x, math.log(sol / mfu_sol))
        beyond = linear.outside(inputs)
        if beyond:
            self.extrapolated = sorted(set(self.extrapolated) | set(beyond))
        widen = EXTRAPOLATION_WIDEN if beyond else 1.0
        log50 = linear.predict_log(inputs)
        q10, q90 = linear.interval
        return (
            min(math.exp(log50 + q10 * widen), 1.0),
            min(math.exp(log50), 1.0),
            min(math.exp(log50 + q90 * widen), 1.0),
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
                model, knowledge.assumptions, fallback, int(model.meta.get("calibration_rows", 0))
            )
    try:
        text = knowledge.root.joinpath(ARTIFACT).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    model = ExportedModel.from_json(text)
    return LearnedEfficiency(model, knowledge.assumptions, fallback)
