"""Tests of the learned efficiency model: provenance, exact export, reproducible retraining, a held-out fold
recomputed (not read from the metadata), the stack as an input, the signs physics demands, and layouts built
exactly as stated."""

from __future__ import annotations

import hashlib
import math
import statistics
import tomllib

import pytest

from advisor.job.inputs import RunConfig, Workload
from advisor.learned.efficiency.dataset import data_hash, shipped_dataset
from advisor.learned.efficiency.evaluate import apes, baselines, conformal_offsets, weighted_quantile
from advisor.learned.efficiency.features import FEATURES
from advisor.learned.efficiency.gbdt import ExportedModel
from advisor.learned.efficiency.learned import LearnedEfficiency, load_learned
from advisor.learned.efficiency.llm_eval import by_source
from advisor.learned.efficiency.prior import PriorEfficiency
from advisor.learned.efficiency.samples import Sample
from advisor.learned.efficiency.train import ARTIFACT, META, export_trees, fit

HELD_OUT = "pytorch/torchtitan"  # the fixed fold: 26 runs of a stack whose traits two other sources share


@pytest.fixture(scope="module")
def meta(knowledge):
    return tomllib.loads(knowledge.root.joinpath(META).read_text())


@pytest.fixture(scope="module")
def exported(knowledge) -> ExportedModel:
    return ExportedModel.from_json(knowledge.root.joinpath(ARTIFACT).read_text())


@pytest.fixture(scope="module")
def samples(knowledge) -> list[Sample]:
    return shipped_dataset(knowledge).samples


def test_artifact_hash_matches_metadata(knowledge, meta) -> None:
    text = knowledge.root.joinpath(ARTIFACT).read_bytes()
    assert hashlib.sha256(text).hexdigest() == meta["artifact_sha256"]


def test_model_was_trained_on_the_current_knowledge(knowledge, meta, exported) -> None:
    assert data_hash(knowledge) == meta["data_sha256"], "knowledge changed since training: run `make train`"
    assert meta["feature_order"] == list(exported.features) == list(FEATURES)
    assert "llm by source" in meta["cv"] and f"llm by source / {HELD_OUT}" in meta["cv"]
    for key in ("scikit-learn", "numpy", "python"):
        assert meta["versions"][key]


def _subsample(samples: list[Sample]) -> list[Sample]:
    """Every LLM run and every 6th other run: the same rows every time, a sixth of the fitting cost."""
    others = [s for s in samples if s.family != "llm"]
    return [s for s in samples if s.family == "llm"] + others[::6]


def _held_out_fold(llm: list[Sample]) -> tuple[list[float], list[float]]:
    """The torchtitan fold predicted by the LLM model fitted without it (penalty chosen among the other rows),
    and by the best constant MFU of the other rows: throughputs, row by row."""
    from advisor.learned.efficiency.linear_fit import choose_lambda, fit_linear, sample_inputs

    train = [s for s in llm if s.row.origin != HELD_OUT]
    lam, _ = choose_lambda(train)
    model = fit_linear(train, lam)
    fold = [i for i, s in enumerate(llm) if s.row.origin == HELD_OUT]
    const, _phys, _prev = baselines(llm, fold, by_source, "llm")
    return (
        [math.exp(model.predict_log(sample_inputs(llm[i]))) * llm[i].sol for i in fold],
        [const[i] for i in fold],
    )


def test_a_held_out_source_is_recomputed_and_beats_the_constant_mfu(samples) -> None:
    llm = [s for s in samples if s.family == "llm"]
    fold = [s for s in llm if s.row.origin == HELD_OUT]
    assert len(fold) == 26
    model, const = _held_out_fold(llm)
    # Recomputed here: the model, fitted without torchtitan, against the best constant MFU of the other rows.
    assert statistics.median(apes(fold, model)) < statistics.median(apes(fold, const))
    assert sum(e < 1.0 for e in apes(fold, model)) / len(fold) >= 0.6


def test_retraining_is_reproducible_and_the_export_is_exact(samples, exported) -> None:
    import numpy as np

    sub = _subsample(samples)[::3]
    first, second = fit(sub), fit(sub)
    base1, trees1 = export_trees(first)
    assert (base1, trees1) == export_trees(second)  # same rows + seed = same trees
    mine = ExportedModel(
        exported.features,
        base1,
        trees1,
        exported.interval,
        exported.feature_min,
        exported.feature_max,
        len(sub),
        {},
    )
    X = np.array([s.features for s in sub])
    assert (
        max(
            abs(a - b)
            for a, b in zip([mine.predict_log(x) for x in X.tolist()], first.predict(X), strict=True)
        )
        < 1e-9
    )


@pytest.mark.slow
def test_the_shipped_trees_are_what_training_produces(samples, exported) -> None:
    _, trees = export_trees(fit(samples))
    assert trees == exported.trees, (
        "the artifact is not what `gpu-advisor model train` fits: run `make train`"
    )


def test_conformal_offsets_weigh_every_group_equally() -> None:
    assert weighted_quantile([1, 2, 3, 4], [1, 1, 1, 1], 0.5) == 2
    assert weighted_quantile([1, 2, 3, 4], [0, 0, 0, 1], 0.1) == 4


def test_predictions_are_bounded_and_monotonic_in_batch(knowledge, samples, exported) -> None:
    model = LearnedEfficiency(exported, knowledge.assumptions, PriorEfficiency(knowledge.assumptions))
    assert "learned from" in model.name and "stack" in model.name
    batch = FEATURES.index("log_items_per_gpu_step")
    for s in samples[::50]:
        log = exported.predict_log(s.features)
        assert math.exp(log) > 0
        bigger = list(s.features)
        bigger[batch] += math.log(4)
        assert exported.predict_log(bigger) >= log - 1e-12


def _predict(knowledge, stack: str):
    from advisor.answer.predict import predict

    learned = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    workload = Workload(
        model="llama-3.1-70b", kind="pretrain", precision="bf16", config=RunConfig(stack=stack)
    )
    return predict(knowledge, workload, "h100-sxm", 64, efficiency=learned)


def test_the_stack_is_an_input_and_the_output_says_why(knowledge) -> None:
    megatron, fsdp = _predict(knowledge, "megatron"), _predict(knowledge, "fsdp")
    assert megatron.efficiency is not None and fsdp.efficiency is not None
    assert megatron.throughput is not None and fsdp.throughput is not None
    # What the stack runs changes the plan (Megatron's tensor parallelism, FSDP's sharding), and the traits
    # the model reads are named.
    assert megatron.throughput.value != pytest.approx(fsdp.throughput.value)
    assert megatron.layout.tp > 1 and fsdp.layout.tp == fsdp.layout.pp == 1
    assert "stack megatron: FlashAttention, compiled or fused kernels" in megatron.efficiency_source
    assert "stack fsdp: FlashAttention, eager kernels" in fsdp.efficiency_source


def test_a_published_run_gets_exactly_its_stated_layout(knowledge) -> None:
    from advisor.learned.efficiency.explicit import job_of_run, stated_layout
    from advisor.learned.efficiency.runs import read_llm_runs
    from advisor.question.errors import InputError

    runs, skipped = read_llm_runs(knowledge)
    run = next(
        r
        for r in runs
        if r.pp > 1 and r.virtual > 1 and r.workload == "llama-3.1-70b" and r.gpu == "h100-sxm"
    )
    job = job_of_run(knowledge, run)
    lay = stated_layout(job, run.count, run.nodes, run.precision, run.micro_batch or 1, run.grad_accum)
    assert (lay.tp, lay.pp, lay.cp, lay.virtual) == (run.tp, run.pp, run.cp, run.virtual)
    assert lay.dp == run.count // (run.tp * run.pp * run.cp)
    assert lay.micro_batch * lay.grad_accum * lay.dp == run.global_batch
    assert any("nvfp4" in why for _, why in skipped)
    with pytest.raises(InputError, match="do not split"):
        stated_layout(job, 24, 3, run.precision, 1)


def test_shipped_intervals_come_from_held_out_sources(exported, samples) -> None:
    lo, hi = exported.interval["llm"]
    assert lo < 0 < hi
    llm = [s for s in samples if s.family == "llm"]
    assert statistics.median(s.efficiency for s in llm) > 0.2
    assert conformal_offsets(llm, dict.fromkeys(range(len(llm)), 0.0), by_source)[0] < 0


def test_the_llm_linear_model_is_recomputed_on_a_held_out_source(samples, exported) -> None:
    from advisor.learned.efficiency.linear import SIGNS
    from advisor.learned.efficiency.linear_fit import candidate_of, fit_linear, sample_inputs

    linear = exported.linear
    assert linear is not None, "the shipped artifact has no LLM linear model: run `gpu-advisor model train`"
    llm = [s for s in samples if s.family == "llm"]
    # Refitted here on every LLM run as the estimator shipped: the same numbers as the artifact.
    again = fit_linear(llm, candidate_of(linear.meta))
    assert max(abs(a - b) for a, b in zip(again.coef, linear.coef, strict=True)) < 1e-9
    assert abs(again.intercept - linear.intercept) < 1e-9
    # The signs physics demands hold: more work per step never lowers it, more communication never raises it.
    for name, sign in SIGNS.items():
        assert linear.coef[linear.inputs.index(name)] * sign >= 0.0, name
    # Pure-Python prediction equals the fitted model's, and inputs beyond the training range are clipped.
    x = sample_inputs(llm[0])
    assert linear.predict_log(x) == pytest.approx(again.predict_log(x))
    far = list(x)
    far[linear.inputs.index("log_count")] = 50.0
    assert linear.outside(far) == ["log_count"]
    assert math.isfinite(linear.predict_log(far))
    lo, hi = linear.interval
    assert lo < 0 < hi


def test_the_ridge_reaches_the_physical_estimator_and_the_choice_is_recorded(samples, meta) -> None:
    from advisor.learned.efficiency.linear_fit import CANDIDATES, Candidate, fit_linear

    llm = [s for s in samples if s.family == "llm"]
    # The strongest penalty is the intercept-only limit: the speed of light x one constant.
    strongest = fit_linear(llm, max(c.lam for c in CANDIDATES if c.free is None))
    constant = fit_linear(llm, Candidate(0.0, ()))
    assert max(abs(c) for c in strongest.coef) < 1e-3
    assert strongest.intercept == pytest.approx(constant.intercept, abs=1e-3)
    assert all(c == 0.0 for c in constant.coef)
    # The physical median: every run once, the same constant as the physical baseline.
    median = fit_linear(llm, Candidate(0.0, (), median=True))
    assert median.intercept == pytest.approx(statistics.median(math.log(min(s.efficiency, 1.0)) for s in llm))
    # The metadata names the estimator chosen and every candidate's held-out figure, the chosen one among the
    # simplest within reach of the best.
    record = meta["llm_model"]
    figures = record["held_out_source_median_by_candidate"]
    assert len(figures) == len(CANDIDATES) and record["estimator"] in figures
    assert figures[record["estimator"]] <= min(figures.values()) + 0.05


def _residual_rows(shift: float) -> tuple[list, dict[int, float]]:
    """Six sources of two families, ten runs each, each source's residuals offset by its own shift x k
    (compiled stacks on one server: nothing the interval's widening reads)."""
    from types import SimpleNamespace

    from advisor.learned.efficiency.features import FEATURES

    known = [1.0 if name == "compiled" else 0.0 for name in FEATURES]
    rows, typical = [], {}
    for k in range(6):
        family = "vendor" if k % 2 else "paper"
        for j in range(10):
            eff = 0.5 * math.exp(shift * (k - 2.5) + 0.02 * (j - 4.5))
            rows.append(
                SimpleNamespace(
                    efficiency=eff,
                    composed=False,
                    features=known,
                    row=SimpleNamespace(origin=f"s{k}", source_family=family),
                )
            )
            typical[len(rows) - 1] = math.log(0.5)
    return rows, typical


def test_the_interval_widens_until_each_held_out_source_is_covered() -> None:
    from advisor.learned.efficiency.llm_eval import (
        COVER_BAND,
        FIT_BAND,
        LEVEL_GRID,
        by_source,
        levels_for,
        offsets,
    )

    def cover(rows, typical, levels) -> dict[str, float]:  # each source against the others' offsets
        got: dict[str, list[bool]] = {}
        for k in sorted({r.row.origin for r in rows}):
            lo, hi = offsets(rows, typical, by_source, (k,), levels)
            for i, r in enumerate(rows):
                if r.row.origin == k:
                    resid = math.log(r.efficiency) - typical[i]
                    got.setdefault(k, []).append(lo - 1e-12 <= resid <= hi + 1e-12)
        return {k: sum(v) / len(v) for k, v in got.items()}

    # Sources that agree: quantiles near the 10th-90th percentiles hold every source inside the band.
    rows, typical = _residual_rows(0.0)
    near, widen = levels_for(rows, typical, by_source)  # type: ignore[arg-type]
    assert widen.unknown == 0.0 == widen.far  # nothing to widen by: the least widening of those that tie
    assert all(COVER_BAND[0] <= c <= COVER_BAND[1] for c in cover(rows, typical, near).values())

    # Sources that sit apart: a new source falls outside the others' 10th-90th percentiles, which cover too
    # little; the quantiles chosen bring each family's mean coverage over its sources (each source weighing
    # the same) nearest the band the choice aims at, and of those the narrowest.
    def miss(levels) -> float:
        got = cover(rows, typical, levels)
        means = [sum(got[f"s{k}"] for k in range(first, 6, 2)) / 3 for first in (0, 1)]
        return sum(max(FIT_BAND[0] - m, m - FIT_BAND[1], 0.0) for m in means)

    rows, typical = _residual_rows(0.2)
    apart, _ = levels_for(rows, typical, by_source)  # type: ignore[arg-type]
    assert sum(cover(rows, typical, (0.10, 0.90)).values()) / 6 < COVER_BAND[0]
    assert miss(apart) == pytest.approx(min(miss(levels) for levels in LEVEL_GRID))


def test_the_llm_linear_model_loads_without_numpy(knowledge) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from advisor.catalog import load_knowledge; "
        "from advisor.learned.efficiency.select import efficiency_model; "
        "m = efficiency_model(load_knowledge()); assert m.model.linear is not None; "
        "assert 'numpy' not in sys.modules and 'sklearn' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
