"""Tests of the learned efficiency model: provenance hashes, exact export, reproducible retraining, sanity."""

from __future__ import annotations

import hashlib
import math
import tomllib

import pytest

from advisor.efficiency.dataset import build_dataset, data_hash
from advisor.efficiency.gbdt import ExportedModel
from advisor.efficiency.learned import LearnedEfficiency, load_learned
from advisor.efficiency.prior import PriorEfficiency
from advisor.efficiency.train import ARTIFACT, META
from advisor.inputs import Workload


@pytest.fixture(scope="module")
def meta(knowledge):  # type: ignore[no-untyped-def]
    return tomllib.loads(knowledge.root.joinpath(META).read_text())


@pytest.fixture(scope="module")
def exported(knowledge) -> ExportedModel:  # type: ignore[no-untyped-def]
    return ExportedModel.from_json(knowledge.root.joinpath(ARTIFACT).read_text())


def test_artifact_hash_matches_metadata(knowledge, meta) -> None:  # type: ignore[no-untyped-def]
    text = knowledge.root.joinpath(ARTIFACT).read_bytes()
    assert hashlib.sha256(text).hexdigest() == meta["artifact_sha256"]


def test_model_was_trained_on_the_current_knowledge(knowledge, meta) -> None:  # type: ignore[no-untyped-def]
    assert data_hash(knowledge) == meta["data_sha256"], "knowledge changed since training: run `make train`"
    assert meta["feature_order"] == list(ExportedModel.from_json(
        knowledge.root.joinpath(ARTIFACT).read_text()).features)
    for key in ("scikit-learn", "numpy", "python"):
        assert meta["versions"][key]


def test_cross_validation_meets_the_goals(meta) -> None:  # type: ignore[no-untyped-def]
    gpu = meta["cv"]["GPU"]
    assert gpu["median_ape"] <= 0.15
    assert gpu["baseline_median_ape"] >= 2 * gpu["median_ape"]


@pytest.fixture(scope="module")
def samples(knowledge):  # type: ignore[no-untyped-def]
    from advisor.context import benchmarks_of

    return build_dataset(knowledge, benchmarks_of(knowledge)).samples


@pytest.mark.slow
def test_export_reproduces_sklearn_and_retraining_reproduces_the_artifact(samples, exported) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from advisor.efficiency.train import export_trees, fit

    model = fit(samples)
    X = np.array([s.features for s in samples])
    sklearn_pred = model.predict(X)
    baseline, trees = export_trees(model)
    mine = ExportedModel(exported.features, baseline, trees, exported.interval, exported.feature_min,
                         exported.feature_max, exported.rows, {})
    ours = [mine.predict_log(x) for x in X.tolist()]
    assert max(abs(a - b) for a, b in zip(ours, sklearn_pred)) < 1e-9
    committed = [exported.predict_log(x) for x in X.tolist()]
    assert max(abs(a - b) for a, b in zip(ours, committed)) < 1e-9  # same data + seed = same model


def test_predictions_are_bounded_and_monotonic_in_batch(knowledge, samples, exported) -> None:  # type: ignore[no-untyped-def]
    from advisor.efficiency.features import FEATURES

    model = LearnedEfficiency(exported, knowledge.assumptions, PriorEfficiency(knowledge.assumptions))
    assert "learned from" in model.name
    batch = FEATURES.index("log_items_per_gpu_step")
    for s in samples[::50]:
        log = exported.predict_log(s.features)
        assert math.exp(log) > 0
        bigger = list(s.features)
        bigger[batch] += math.log(4)
        assert exported.predict_log(bigger) >= log - 1e-12


def test_learned_model_covers_training_and_serving_uses_its_own_model(knowledge) -> None:  # type: ignore[no-untyped-def]
    from advisor.predict import predict

    learned = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    assert learned is not None
    train = predict(knowledge, Workload(model="resnet50", precision="fp16"), "a100-80gb-sxm", 8, efficiency=learned)
    assert train.efficiency is not None and train.efficiency.p90 <= 1.0
    assert train.efficiency_source.startswith("learned from")
    serve = predict(knowledge, Workload(model="llama-3.1-8b", kind="inference"), "h100-sxm", 1, efficiency=learned)
    # Serving efficiency comes from the serving model learned on measured runs (advisor/serving), not the
    # training model and not the decode prior.
    prior = knowledge.assumptions.efficiency["decode"]
    assert serve.efficiency is not None and serve.efficiency.p50 != pytest.approx(prior.p50)
    assert serve.efficiency_source.startswith("learned from measured serving runs")


def test_measured_runs_are_predicted_within_the_interval_mostly(knowledge, samples, exported) -> None:  # type: ignore[no-untyped-def]
    from advisor.efficiency.gbdt import efficiency_interval
    from advisor.efficiency.dataset import family_of
    from advisor.efficiency.features import FEATURES

    kind = FEATURES.index("kind_code")
    inside = 0
    for s in samples:
        p10, _, p90 = efficiency_interval(exported, s.features, family_of(s.features[kind]))
        inside += p10 <= min(s.efficiency, 1.0) <= p90
    assert inside / len(samples) >= 0.8  # in-sample, intervals calibrated on held-out GPUs
