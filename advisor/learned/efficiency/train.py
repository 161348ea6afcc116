"""Provides the training of the efficiency model: scikit-learn gradient boosting on log efficiency (every
run) and, for LLM runs of LLM stacks, the estimator nested held-out validation chooses (the speed of light x
a constant, or a Huber ridge on physical inputs and the family of source); its bounds; exported as plain
parameters with their metadata (data hash, versions, feature order, CV scores, hashes)."""

from __future__ import annotations

import hashlib
import math
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli_w

from advisor import __version__
from advisor.catalog.common import drop_none
from advisor.catalog.loader import Knowledge
from advisor.catalog.stacks import stacks_of
from advisor.catalog.userdata import write_text_atomic
from advisor.learned.efficiency.bounds import Bounds
from advisor.learned.efficiency.bounds_fit import fit_bounds
from advisor.learned.efficiency.dataset import data_hash, shipped_dataset
from advisor.learned.efficiency.development import development_samples
from advisor.learned.efficiency.evaluate import Scores, conformal_offsets, evaluate_scheme, percentile, target
from advisor.learned.efficiency.features import FEATURES
from advisor.learned.efficiency.gbdt import ExportedModel, Tree
from advisor.learned.efficiency.linear import LinearLogModel
from advisor.learned.efficiency.linear_fit import Candidate, choose_lambda, fit_linear
from advisor.learned.efficiency.llm_eval import LayoutRank, llm_evaluation
from advisor.learned.efficiency.runs import Run
from advisor.learned.efficiency.samples import Sample

if TYPE_CHECKING:
    from sklearn.ensemble import HistGradientBoostingRegressor

SEED = 0
ARTIFACT = "efficiency_model.json"
META = "efficiency_model.meta.toml"
HYPERPARAMETERS: dict[str, Any] = {
    "loss": "squared_error",
    "learning_rate": 0.1,
    "max_iter": 100,
    "max_leaf_nodes": 12,
    "min_samples_leaf": 20,
    "l2_regularization": 1.0,
    "early_stopping": False,
}
# Physics the trees may not contradict: more work per GPU step never lowers efficiency, more exposed
# communication never raises it.
MONOTONIC = {"log_items_per_gpu_step": 1, "comm_share": -1}
LLM_WEIGHT = 4.0


def _targets(samples: Sequence[Sample]) -> list[float]:
    return [target(s) for s in samples]


def fit(
    samples: Sequence[Sample], weights: Sequence[float] | None = None, seed: int = SEED
) -> HistGradientBoostingRegressor:
    """A fitted HistGradientBoostingRegressor on log efficiency."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingRegressor

    monotonic = [MONOTONIC.get(name, 0) for name in FEATURES]
    model = HistGradientBoostingRegressor(**HYPERPARAMETERS, monotonic_cst=monotonic, random_state=seed)
    model.fit(
        np.array([s.features for s in samples]),
        np.array(_targets(samples)),
        sample_weight=np.array(weights if weights is not None else default_weights(samples)),
    )
    return model


def default_weights(samples: Sequence[Sample]) -> list[float]:
    """LLM runs weigh LLM_WEIGHT: they are few next to Lambda's thousands of small-model runs, and where
    users live."""
    return [LLM_WEIGHT if s.family == "llm" else 1.0 for s in samples]


def export_trees(model: Any) -> tuple[float, tuple[Tree, ...]]:
    """The baseline and node arrays of a fitted HistGradientBoostingRegressor (single output)."""
    baseline = float(model._baseline_prediction.ravel()[0])
    trees = []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        trees.append(
            Tree(
                feature=tuple(int(v) for v in nodes["feature_idx"]),
                threshold=tuple(float(v) for v in nodes["num_threshold"]),
                left=tuple(int(v) for v in nodes["left"]),
                right=tuple(int(v) for v in nodes["right"]),
                value=tuple(float(v) for v in nodes["value"]),
                leaf=tuple(bool(v) for v in nodes["is_leaf"]),
            )
        )
    return baseline, tuple(trees)


def _fit_predict(
    samples: Sequence[Sample], weights: Sequence[float]
) -> Callable[[list[int], list[int]], list[float]]:
    def run(train: list[int], test: list[int]) -> list[float]:
        import numpy as np

        model = fit([samples[i] for i in train], [weights[i] for i in train])
        return [float(v) for v in model.predict(np.array([samples[i].features for i in test]))]

    return run


def by_gpu(s: Sample) -> str:
    """The held-out-GPU grouping."""
    return s.row.gpu


def other_scores(
    samples: Sequence[Sample], weights: Sequence[float]
) -> tuple[list[Scores], dict[str, tuple[float, float]]]:
    """The trees on the other rows, each GPU held out in turn; their interval from the held-out-GPU residuals
    (each GPU weighted equally)."""
    scores, oof = evaluate_scheme(samples, "other", "GPU", by_gpu, _fit_predict(samples, weights))
    return scores, {"other": conformal_offsets(samples, oof, by_gpu)}


def evaluation(
    knowledge: Knowledge, extra: Sequence[Run] = ()
) -> tuple[list[Scores], list[str], list[LayoutRank]]:
    """Every held-out score of the model and the baselines, notes that define them, and the layout-ranking
    agreement within each source that varies only the layout."""
    data = shipped_dataset(knowledge, extra)
    llm = llm_evaluation(data.samples, development=development_samples(knowledge))  # as `model train` does
    others, _ = other_scores(data.samples, default_weights(data.samples))
    n_llm = sum(1 for s in data.samples if s.family == "llm")
    notes = [
        f"{len(data.samples)} measured runs ({n_llm} LLM runs of LLM training stacks, "
        f"{len(data.samples) - n_llm} others); {len(data.skipped)} left out (GPU or model not in the "
        "catalogue, no training peak for the precision, LoRA, or a layout the core cannot build)"
    ]
    return llm.scores + others, notes, llm.ranks


def _llm_record(chosen: Candidate, linear: LinearLogModel, figures: dict[Candidate, float]) -> dict[str, Any]:
    """The metadata of the LLM model: the estimator chosen, its terms, its interval and widening, and every
    candidate's held-out figure."""
    return {
        "kind": "chosen by leave-one-source-out (source-balanced; the simplest within one standard "
        "error of the best) among the physical estimators and the Huber ridge at each penalty; "
        "P50 at the typical (non-vendor) family",
        "estimator": chosen.name,
        "inputs": list(linear.inputs),
        "lambda": linear.meta["lambda"],
        "huber": linear.meta["huber"],
        "coef": [round(c, 5) for c in linear.coef],
        "intercept": round(linear.intercept, 5),
        "interval": [round(v, 4) for v in linear.interval],
        "interval_widen": linear.widen,
        "interval_widen_far": linear.widen_far,
        "held_out_source_median_by_candidate": {c.name: round(v, 4) for c, v in figures.items()},
    }


def train(
    knowledge: Knowledge, extra: Sequence[Run] = (), extra_weight: float = 1.0, with_cv: bool = True
) -> tuple[ExportedModel, dict[str, Any], list[Scores]]:
    """Fit on the shipped runs (plus extra runs, e.g. a user's calibration) and export."""
    import numpy as np
    import sklearn

    data = shipped_dataset(knowledge, extra)
    samples = data.samples
    extra_keys = {r.key for r in extra}
    weights = [
        extra_weight if s.row.key in extra_keys else w
        for s, w in zip(samples, default_weights(samples), strict=True)
    ]
    model = fit(samples, weights)
    baseline, trees = export_trees(model)
    llm_rows = [s for s in samples if s.family == "llm"]
    chosen, figures = choose_lambda(llm_rows)
    development = development_samples(knowledge)
    held = llm_evaluation(samples, with_cv, None if with_cv else chosen, development)
    linear = fit_linear(llm_rows, chosen, held.interval, held.widen.unknown, held.widen.far)
    if with_cv:
        others, interval = other_scores(samples, weights)
        scores = held.scores + others
    else:
        scores, interval = [], _in_sample_interval(samples, model)
    interval["llm"] = held.interval
    interval["all"] = interval["other"]
    meta: dict[str, Any] = {
        "seed": SEED,
        "rows": len(samples),
        "skipped_rows": len(data.skipped),
        "data_sha256": data_hash(knowledge, "".join(repr(r) for r in extra).encode()),
        "hyperparameters": HYPERPARAMETERS,
        "llm_weight": LLM_WEIGHT,
        "monotonic": MONOTONIC,
        "feature_order": list(FEATURES),
        "stack_traits": {k: list(v.traits()) for k, v in sorted(stacks_of(knowledge).items())},
        "calibration_rows": len(extra),
        "llm_error": round(held.error, 4),
        "llm_model": _llm_record(chosen, linear, figures),
        "interval_coverage": {
            "kind": "P10-P90 coverage held out by source: each family's mean over its sources; development: "
            "the development sets' runs (development.py), each source weighing the same",
            "development_runs": len(development),
            **held.coverage,
        },
        "versions": {
            "gpu-advisor": __version__,
            "python": platform.python_version(),
            "scikit-learn": sklearn.__version__,
            "numpy": np.__version__,
        },
    }
    exported = export(samples, baseline, trees, interval, meta, scores, linear, fit_bounds(samples))
    return exported, meta, scores


def export(
    samples: Sequence[Sample],
    baseline: float,
    trees: tuple[Tree, ...],
    interval: dict[str, tuple[float, float]],
    meta: dict[str, Any],
    scores: Sequence[Scores],
    linear: LinearLogModel | None = None,
    bounds: Bounds | None = None,
) -> ExportedModel:
    """The artifact: trees, intervals, the training range, the bounds and the headline held-out figure."""
    columns = list(zip(*(s.features for s in samples), strict=True))
    return ExportedModel(
        FEATURES,
        baseline,
        trees,
        interval,
        tuple(min(c) for c in columns),
        tuple(max(c) for c in columns),
        len(samples),
        {
            "seed": SEED,
            "data_sha256": meta["data_sha256"],
            "calibration_rows": meta["calibration_rows"],
            "llm_error": meta["llm_error"],
        },
        linear,
        bounds,
    )


def _in_sample_interval(samples: Sequence[Sample], model: Any) -> dict[str, tuple[float, float]]:
    """In-sample residual P10/P90 per family (used where no cross-validation runs, e.g. calibration)."""
    import numpy as np

    pred = model.predict(np.array([s.features for s in samples]))
    out: dict[str, tuple[float, float]] = {}
    for family in ("llm", "other"):
        resid = [target(s) - float(p) for s, p in zip(samples, pred, strict=True) if s.family == family]
        if resid:
            out[family] = (percentile(resid, 10), percentile(resid, 90))
    out["all"] = out.get("other") or out["llm"]
    return out


def cv_record(scores: Sequence[Scores]) -> dict[str, Any]:
    """The held-out figures as metadata: '<family> by <scheme>' (and per source), rounded."""
    out: dict[str, Any] = {}
    for s in scores:
        key = f"{s.family} by {s.scheme}" + ("" if s.subset == "all" else f" / {s.subset}")
        out[key] = drop_none(
            {
                k: (
                    round(v, 4)
                    if isinstance(v, float) and not math.isnan(v)
                    else (None if isinstance(v, float) else v)
                )
                for k, v in asdict(s).items()
                if k not in ("family", "scheme", "subset")
            }
        )
    return out


def write_artifact(
    model: ExportedModel, meta: dict[str, Any], scores: Sequence[Scores], folder: Path
) -> Path:
    """Write the JSON artifact and its metadata (with the artifact's hash and the held-out scores) into
    folder."""
    text = model.to_json()
    write_text_atomic(folder / ARTIFACT, text)
    record = {
        **meta,
        "artifact": ARTIFACT,
        "artifact_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "cv": cv_record(scores),
    }
    header = "# Written by `gpu-advisor model train`: the efficiency model's provenance. Do not edit.\n"
    write_text_atomic(folder / META, header + tomli_w.dumps(drop_none(record)))
    return folder / ARTIFACT
