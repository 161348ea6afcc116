"""Provides the calibration of a serving answer: the user's measured results on the same GPU and engine move
its throughput, TTFT and TPOT (training answers are calibrated inside the efficiency model)."""

from __future__ import annotations

from advisor.catalog.gpus import Gpu
from advisor.catalog.run_store import default_profile
from advisor.job.layout import Layout
from advisor.learned.calibration.efficiency import calibration_words, stale_words
from advisor.learned.calibration.multiplier import SERVING_SCALES, correction, shifted
from advisor.learned.calibration.points import serving_point
from advisor.learned.calibration.runs import SERVING_METRIC, run_set
from advisor.learned.efficiency import Interval
from advisor.search.context import Context

DEFAULT_ENGINE = "vllm"


def training_profile_notes(ctx: Context, gpus: list[str]) -> list[str]:
    """One line per GPU whose plans the user's runs calibrate (training runs, or serving results on the
    engine asked): the profile and how many runs."""
    if not ctx.job.training:
        return serving_profile_notes(ctx, gpus)
    from advisor.learned.calibration.efficiency import CalibratedEfficiency

    model = getattr(ctx.efficiency, "_model", ctx.efficiency)  # read through a model loaded on first use
    if not isinstance(model, CalibratedEfficiency):
        return []
    job, out = ctx.job, []
    for gpu in gpus:
        profile = job.profile or default_profile(gpu, job.stack)
        found = run_set(profile, "training", gpu, job.stack, model.base.name)
        if found is not None and found.runs:
            out.append(
                f"{gpu} plans calibrated on {len(found.runs)} of your runs (profile {profile}); each plan's "
                "step moves by its compute and communication shares of what they measured, and by the share "
                "its distance from them allows"
            )
    return out


def serving_profile_notes(ctx: Context, gpus: list[str]) -> list[str]:
    """One line per GPU whose serving plans were simulated at the efficiencies the user's results moved."""
    from advisor.learned.calibration.serving_profile import (
        calibrating,
        factor_words,
        profile_fit,
        serving_runs,
    )

    if not calibrating(ctx.efficiency):
        return []
    job, out = ctx.job, []
    engine = job.config.engine or DEFAULT_ENGINE
    for gpu in gpus:
        profile = job.profile or default_profile(gpu, engine)
        knobs = profile_fit(profile, gpu, engine)
        if knobs is not None:
            runs = len(serving_runs(profile, gpu, engine)[0])
            out.append(
                f"{gpu} plans simulated at the {engine} efficiencies your {runs} result(s) moved (profile "
                f"{profile}): {factor_words(knobs)}"
            )
    return out


def serving_calibrated(
    ctx: Context, gpu: Gpu, layout: Layout, figures: dict[str, Interval]
) -> tuple[dict[str, Interval], tuple[str, ...]]:
    """figures (output_tok_s, ttft_ms, tpot_ms), already simulated at the efficiencies the profile's results
    moved (advisor/learned/calibration/serving_profile.py), moved by what those results leave unexplained,
    and the note naming the profile and the multipliers."""
    from advisor.learned.calibration.serving_profile import (
        calibrating,
        factor_words,
        profile_fit,
        serving_base_name,
    )

    if not calibrating(ctx.efficiency):  # the uncalibrated figure was asked for
        return figures, ()
    job = ctx.job
    engine = job.config.engine or DEFAULT_ENGINE
    profile = job.profile or default_profile(gpu.id, engine)
    found = run_set(profile, "serving", gpu.id, engine, serving_base_name())
    if found is None:
        return figures, ()
    if not found.runs:
        return figures, (stale_words(found.stale, profile),)
    at = {
        **serving_point(
            params=job.params,
            count=layout.count,
            tp=layout.tp,
            load=float(job.batch_size or job.concurrency or job.requests_per_s or 1.0),
            prompt=job.prompt_tokens,
            output=job.output_tokens,
            precision=layout.precision,
        ),
        "rate": 0.0 if (job.batch_size or job.concurrency) else 1.0,
    }
    out, notes = dict(figures), []
    knobs = profile_fit(profile, gpu.id, engine)
    if knobs is not None:
        notes.append(
            f"calibrated on {len(found.runs)} of your runs (profile {profile}): the engine's efficiencies on "
            f"{gpu.id} moved ({factor_words(knobs)}) and the load simulated with them"
        )
    for metric, iv in figures.items():
        pairs = found.ratios.get(metric, ())
        fix = correction(at, pairs, SERVING_METRIC[metric], SERVING_SCALES)
        if fix is None:
            continue
        out[metric] = Interval(*shifted(iv.p10, iv.p50, iv.p90, fix))
        words = calibration_words(fix, profile, len(pairs))
        notes.append(
            f"{metric}: {words}"
            if knobs is None
            else f"{metric}: what is left, {words[words.find(': ') + 2 :]}"
        )
    if found.stale:
        notes.append(stale_words(found.stale, profile))
    return out, tuple(notes)
