"""Provides the serving efficiencies a plan is priced at: the learned ones, moved by the multipliers the
profile's results on the same GPU and engine were fitted to (advisor/learned/calibration/serving.py); read by
the one serving search, so predict, recommend and the UI all simulate with them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.catalog.userdata import data_dir

if TYPE_CHECKING:  # the store and the fit are read only when a profile exists
    from advisor.catalog.run_store import StoredRun
    from advisor.job.resolve import Job
    from advisor.learned.calibration.serving import KnobFit
    from advisor.physics.serving import Efficiency


class ServingTrial:
    """An efficiency model whose serving plans are priced at given multipliers (what a fit simulates);
    everything else is the base model's."""

    def __init__(self, base: Any, log_factors: Sequence[float]) -> None:
        self.base = base
        self.log_factors = tuple(log_factors)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


def serving_base_name() -> str:
    """The serving model that predicted a stored result's base, fingerprinted: a refit serving model leaves
    the runs predicted by the old one out until `calibrate --refresh` (the multipliers are relative to the
    efficiencies it learned)."""
    from advisor.learned.serving.model import load_model

    model = load_model()
    if model is None:
        return "serving priors"
    return f"serving model {hashlib.sha256(model.to_json().encode()).hexdigest()[:12]}"


def calibrating(model: Any) -> bool:
    """Whether answers with this efficiency model apply the user's runs (an efficiency model read on first
    use is asked without reading it: it is calibrated when any profile holds runs)."""
    from advisor.catalog.run_store import list_profiles
    from advisor.learned.calibration.efficiency import CalibratedEfficiency

    if isinstance(model, CalibratedEfficiency):
        return True
    inner = vars(model).get("_model", model) if hasattr(model, "__dict__") else model
    if inner is None:  # not read yet: with_calibration() wraps it exactly when a profile holds runs
        return bool(list_profiles())
    return isinstance(inner, CalibratedEfficiency)


def serving_runs(profile: str, gpu: str, engine: str) -> tuple[tuple[StoredRun, ...], int]:
    """The profile's serving results on this GPU and engine predicted by the serving model in use, and how
    many were predicted by another (left out until refreshed)."""
    from advisor.catalog.run_store import load_runs

    every = [r for r in load_runs(profile) if r.kind == "serving" and r.gpu == gpu and r.key == engine]
    name = serving_base_name()
    fresh = tuple(r for r in every if r.base_model == name)
    return fresh, len(every) - len(fresh)


def profile_fit(profile: str, gpu: str, engine: str) -> KnobFit | None:
    """The multipliers fitted on a profile's results on a GPU and engine; None when there are none, or they
    were fitted on other runs or by another serving model (calibrate --refresh fits them again)."""
    from advisor.catalog.run_store import load_serving_fit
    from advisor.learned.calibration.serving import KnobFit, fit_name

    # The store reads a file once while it is unchanged, so a search that prices many replica shapes of
    # one GPU pays only the check below per shape.
    got = load_serving_fit(profile, gpu, engine)
    if got is None:
        return None
    runs, _ = serving_runs(profile, gpu, engine)
    if got.base_model != fit_name(serving_base_name()) or sorted(got.runs) != sorted(r.id for r in runs):
        return None
    return KnobFit(tuple(got.mean), tuple(tuple(row) for row in got.precision))


@lru_cache(maxsize=4)
def _profiles(base: Path) -> str:
    """The profiles folder under a data directory (asked for every replica a search prices)."""
    return str(base / "profiles")


def serving_efficiency(model: Any, job: Job, gpu: str, engine: str, eff: Efficiency) -> Efficiency:
    """eff moved by the user's serving results on this GPU and engine (the profile the job names, else the
    GPU's and engine's default); eff itself when the model does not calibrate or no result applies."""
    if isinstance(model, ServingTrial):
        from advisor.learned.calibration.serving import adjusted

        return adjusted(eff, model.log_factors)
    if not os.path.isdir(_profiles(data_dir())):  # no profile was ever stored: one stat, nothing imported
        return eff
    from advisor.catalog.run_store import default_profile
    from advisor.learned.calibration.serving import adjusted

    if not calibrating(model):
        return eff
    got = profile_fit(job.profile or default_profile(gpu, engine), gpu, engine)
    return adjusted(eff, got.mean) if got is not None else eff


def factor_words(fit: KnobFit) -> str:
    """'decode bandwidth share x0.91, prefill speed x0.42, ...' (the multipliers that moved)."""
    from advisor.learned.calibration.serving import KNOB_WORDS, KNOBS

    parts = [f"{KNOB_WORDS[k]} x{v:.2f}" for k, v in zip(KNOBS, fit.factors().values(), strict=True)]
    return ", ".join(parts)
