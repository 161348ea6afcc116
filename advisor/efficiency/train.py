"""Provides the training of the efficiency model: scikit-learn gradient boosting on log efficiency, exported
as plain parameters with its metadata (data hash, versions, feature order, CV scores, artifact hash)."""

from __future__ import annotations

import argparse
import hashlib
import math
import platform
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import tomli_w

from advisor import __version__
from advisor.catalog.benchmarks import BenchmarkRow
from advisor.catalog.loader import Knowledge
from advisor.context import benchmarks_of
from advisor.efficiency.dataset import build_dataset, data_hash, family_of
from advisor.efficiency.evaluate import Scores, percentile, score
from advisor.efficiency.features import FEATURES, Sample
from advisor.efficiency.gbdt import ExportedModel, Tree
from advisor.export import drop_none
from advisor.userdata import write_text_atomic

SEED = 0
ARTIFACT = "efficiency_model.json"
META = "efficiency_model.meta.toml"
HYPERPARAMETERS: dict[str, Any] = {
    "loss": "squared_error", "learning_rate": 0.1, "max_iter": 100, "max_leaf_nodes": 12,
    "min_samples_leaf": 20, "l2_regularization": 1.0, "early_stopping": False,
}
# Physics the trees may not contradict: more work per GPU step never lowers efficiency, more exposed
# communication never raises it.
MONOTONIC = {"log_items_per_gpu_step": 1, "comm_share": -1}


def _targets(samples: Sequence[Sample]) -> list[float]:
    # Efficiency above 1 means the model's FLOP count of that workload is too high; cap it at the roofline.
    return [math.log(min(max(s.efficiency, 1e-4), 1.0)) for s in samples]


def fit(samples: Sequence[Sample], weights: Sequence[float] | None = None, seed: int = SEED):  # type: ignore[no-untyped-def]
    """A fitted HistGradientBoostingRegressor on log efficiency."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingRegressor

    monotonic = [MONOTONIC.get(name, 0) for name in FEATURES]
    model = HistGradientBoostingRegressor(**HYPERPARAMETERS, monotonic_cst=monotonic, random_state=seed)
    model.fit(np.array([s.features for s in samples]), np.array(_targets(samples)),
              sample_weight=None if weights is None else np.array(weights))
    return model


def export_trees(model: Any) -> tuple[float, tuple[Tree, ...]]:
    """The baseline and node arrays of a fitted HistGradientBoostingRegressor (single output)."""
    baseline = float(model._baseline_prediction.ravel()[0])
    trees = []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        trees.append(Tree(
            feature=tuple(int(v) for v in nodes["feature_idx"]),
            threshold=tuple(float(v) for v in nodes["num_threshold"]),
            left=tuple(int(v) for v in nodes["left"]),
            right=tuple(int(v) for v in nodes["right"]),
            value=tuple(float(v) for v in nodes["value"]),
            leaf=tuple(bool(v) for v in nodes["is_leaf"]),
        ))
    return baseline, tuple(trees)


def _fit_predict(samples: Sequence[Sample], weights: Sequence[float] | None):  # type: ignore[no-untyped-def]
    def run(train: list[int], test: list[int]) -> list[float]:
        model = fit([samples[i] for i in train], None if weights is None else [weights[i] for i in train])
        import numpy as np

        return [float(v) for v in model.predict(np.array([samples[i].features for i in test]))]

    return run


def _intervals(samples: Sequence[Sample], oof: Sequence[float]) -> dict[str, tuple[float, float]]:
    """P10/P90 of held-out-GPU log residuals, per family: split-conformal intervals."""
    resid: dict[str, list[float]] = {"all": []}
    for s, p in zip(samples, oof):
        r = math.log(min(max(s.efficiency, 1e-4), 1.0)) - p
        resid["all"].append(r)
        resid.setdefault(family_of(s.features[FEATURES.index("kind_code")]), []).append(r)
    return {k: (percentile(v, 10), percentile(v, 90)) for k, v in resid.items() if len(v) >= 20}


def cross_validated(samples: Sequence[Sample], weights: Sequence[float] | None
                    ) -> tuple[list[Scores], dict[str, tuple[float, float]]]:
    """Leave-one-GPU-out and leave-one-workload-out scores, and intervals from the held-out-GPU residuals."""
    run = _fit_predict(samples, weights)
    _, oof = score("GPU", samples, lambda s: s.row.gpu, run)
    interval = _intervals(samples, oof)
    logo = score("GPU", samples, lambda s: s.row.gpu, lambda tr, te: [oof[i] for i in te], interval["all"])[0]
    lowo = score("workload", samples, lambda s: s.row.workload, run, interval["all"])[0]
    return [logo, lowo], interval


def evaluation(knowledge: Knowledge, extra: Sequence[BenchmarkRow] = ()) -> tuple[list[Scores], list[str]]:
    """Leave-one-GPU-out and leave-one-workload-out scores of model and constant baseline."""
    data = build_dataset(knowledge, [*benchmarks_of(knowledge), *extra])
    samples = data.samples
    (logo, lowo), _ = cross_validated(samples, None)
    notes = [f"{len(samples)} measured runs; {len(data.skipped)} left out (no peak figure for their precision)",
             "error = |predicted - measured| / measured throughput; const. = one efficiency fitted on the "
             "training folds, as analytic tools do; rank acc. = GPU pairs of one workload, precision and "
             "count ordered as measured",
             f"held-out predictions above the speed of light before capping: GPU {logo.above_speed_of_light}, "
             f"workload {lowo.above_speed_of_light} (every prediction is capped at 100%)"]
    return [logo, lowo], notes


def train(knowledge: Knowledge, extra: Sequence[BenchmarkRow] = (), extra_weight: float = 1.0,
          with_cv: bool = True) -> tuple[ExportedModel, dict[str, Any], list[Scores]]:
    """Fit on the shipped benchmarks (plus extra rows, e.g. a user's calibration) and export."""
    import numpy as np
    import sklearn

    data = build_dataset(knowledge, [*benchmarks_of(knowledge), *extra])
    samples = data.samples
    extra_ids = {id(r) for r in extra}
    weights = [extra_weight if id(s.row) in extra_ids else 1.0 for s in samples] if extra else None
    model = fit(samples, weights)
    baseline, trees = export_trees(model)
    scores: list[Scores] = []
    if with_cv:
        scores, interval = cross_validated(samples, weights)
    else:
        resid = [t - float(p) for t, p in zip(_targets(samples), model.predict(np.array([s.features for s in samples])))]
        interval = {"all": (percentile(resid, 10), percentile(resid, 90))}
    columns = list(zip(*(s.features for s in samples)))
    extra_bytes = "".join(r.model_dump_json() for r in extra).encode()
    meta: dict[str, Any] = {
        "seed": SEED, "rows": len(samples), "skipped_rows": len(data.skipped),
        "data_sha256": data_hash(knowledge, extra_bytes), "hyperparameters": HYPERPARAMETERS,
        "monotonic": MONOTONIC, "feature_order": list(FEATURES), "calibration_rows": len(extra),
        "versions": {"gpu-advisor": __version__, "python": platform.python_version(),
                     "scikit-learn": sklearn.__version__, "numpy": np.__version__},
    }
    exported = ExportedModel(FEATURES, baseline, trees, interval, tuple(min(c) for c in columns),
                             tuple(max(c) for c in columns), len(samples),
                             {"seed": SEED, "data_sha256": meta["data_sha256"], "calibration_rows": len(extra),
                              **({"logo_median_ape": round(scores[0].median_ape, 4)} if scores else {})})
    return exported, meta, scores


def write_artifact(model: ExportedModel, meta: dict[str, Any], scores: Sequence[Scores], folder: Path) -> Path:
    """Write the JSON artifact and its metadata (with the artifact's hash) into folder."""
    text = model.to_json()
    write_text_atomic(folder / ARTIFACT, text)
    record = {**meta, "artifact": ARTIFACT, "artifact_sha256": hashlib.sha256(text.encode()).hexdigest(),
              "cv": {s.scheme: {"folds": s.folds, "median_ape": round(s.median_ape, 4), "p90_ape": round(s.p90_ape, 4),
                                "baseline_median_ape": round(s.baseline_median_ape, 4),
                                "baseline_p90_ape": round(s.baseline_p90_ape, 4),
                                "rank_accuracy": round(s.rank_accuracy, 4),
                                "baseline_rank_accuracy": round(s.baseline_rank_accuracy, 4),
                                "coverage_p10_p90": None if s.coverage_p10_p90 is None else round(s.coverage_p10_p90, 4)}
                     for s in scores}}
    header = "# Written by `gpu-advisor model train`: the efficiency model's provenance. Do not edit.\n"
    write_text_atomic(folder / META, header + tomli_w.dumps(drop_none(record)))
    return folder / ARTIFACT


def train_cli(args: argparse.Namespace) -> int:
    """`gpu-advisor model train`."""
    from advisor.catalog import load_knowledge
    from advisor.efficiency.evaluate import scores_table

    knowledge = load_knowledge()
    folder = Path(args.out_dir) if args.out_dir else Path(str(resources.files("knowledge")))
    print(f"training on {knowledge.root.joinpath('benchmarks.csv')} (seed {SEED}); cross-validating ...",
          file=sys.stderr)
    model, meta, scores = train(knowledge)
    path = write_artifact(model, meta, scores, folder)
    print(scores_table(scores))
    print(f"wrote {path} and {folder / META} ({model.rows} rows, {len(model.trees)} trees)")
    return 0
