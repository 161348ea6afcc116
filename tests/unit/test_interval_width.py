"""The LLM interval's width by what the composed step does not know of a plan (an eager stack: memory-bound
passes the step prices as fused kernels; the servers it spans) and by how far the plan lies from the measured
runs (a stack under two sources, a GPU no run used, fine-tuning, a mixture of experts, a sequence past the
attention table), each by a factor chosen with the interval so that each family's sources held out, and the
development sets' runs, are covered alike (llm_eval.levels_for)."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from advisor.job.inputs import RunConfig, Workload
from advisor.learned.efficiency.features import FEATURES
from advisor.learned.efficiency.linear import LinearLogModel, eager, unknown, unknown_note

ROOT = Path(__file__).resolve().parents[2]


def _features(compiled: float, megatron: float, servers: int = 1) -> list[float]:
    x = [0.0] * len(FEATURES)
    x[FEATURES.index("compiled")] = compiled
    x[FEATURES.index("stack_megatron")] = megatron
    x[FEATURES.index("nodes_log2")] = math.log2(servers)
    return x


def test_what_the_step_does_not_know_of_a_plan() -> None:
    assert eager(_features(0.0, 0.0)) == 1.0
    assert eager(_features(1.0, 0.0)) == 0.0  # compiled or fused kernels (composer, torchtitan)
    assert eager(_features(0.0, 1.0)) == 0.0  # a Megatron-style runtime (nanotron)
    # One server: only the stack counts; 64 servers (past the 8 the collectives were measured at) count as
    # much as an eager stack.
    assert unknown(_features(1.0, 1.0, 1)) == 0.0
    assert unknown(_features(1.0, 1.0, 64)) == pytest.approx(1.0)
    assert unknown(_features(0.0, 0.0, 8)) == pytest.approx(1.5)
    assert unknown_note(_features(1.0, 1.0), 4.0) == ""
    assert unknown_note(_features(0.0, 0.0, 8), 0.0) == ""  # no widening chosen: nothing to say
    note = unknown_note(_features(1.0, 0.0, 64), 4.0)
    assert note.startswith("interval 5.0x as wide: 64 servers"), note


def test_the_widening_is_stored_and_read_back(knowledge) -> None:
    from advisor.learned.efficiency.learned import load_learned
    from advisor.learned.efficiency.prior import PriorEfficiency

    shipped = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    assert shipped is not None and shipped.model.linear is not None
    linear = shipped.model.linear
    again = LinearLogModel.from_dict(linear.to_dict())
    assert again.widen == linear.widen
    lo, hi = linear.interval
    k = 1.0 + linear.widen
    assert linear.interval_of(_features(0.0, 0.0)) == pytest.approx((lo * k, hi * k))
    assert linear.interval_of(_features(1.0, 1.0, 64)) == pytest.approx((lo * k, hi * k))
    assert linear.interval_of(_features(1.0, 1.0)) == pytest.approx((lo, hi))
    older = {k: v for k, v in linear.to_dict().items() if k != "interval_widen"}
    assert LinearLogModel.from_dict(older).widen == 0.0  # an artifact from before: one width
    for bad in (-1.0, float("nan"), 1e6):
        with pytest.raises(ValueError, match="widening"):
            LinearLogModel.from_dict({**linear.to_dict(), "interval_widen": bad})


def _widened(knowledge, widen: float):
    """The shipped model with its LLM interval's widening set to widen and no distance term (the mechanism,
    whatever the training chose)."""
    import json

    from advisor.learned.efficiency.gbdt import ExportedModel
    from advisor.learned.efficiency.learned import LearnedEfficiency
    from advisor.learned.efficiency.prior import PriorEfficiency

    data = json.loads((ROOT / "knowledge" / "efficiency_model.json").read_text(encoding="utf-8"))
    data["llm_linear"]["interval_widen"] = widen
    data["llm_linear"]["interval_widen_far"] = 0.0  # the distance term apart (its own tests below)
    model = ExportedModel.from_json(json.dumps(data))
    return LearnedEfficiency(model, knowledge.assumptions, PriorEfficiency(knowledge.assumptions))


def test_a_plan_on_an_eager_stack_has_a_wider_interval_where_the_training_widens(knowledge) -> None:
    # Llama 3.1 8B pre-trained on 8 H100: the same plan's P90 / P10 on an eager PyTorch FSDP stack against
    # torchtitan (compiled). Widened (a widening the training may choose), the eager plan's interval is
    # wider and says why; at no widening (what the shipped runs choose today) the two are as wide and
    # neither says it is wider.
    from advisor.answer.predict import predict

    def spans(widen: float) -> tuple[dict[str, float], dict[str, list[str]]]:
        model = _widened(knowledge, widen)
        out_spans, notes = {}, {}
        for stack in ("fsdp", "torchtitan"):
            w = Workload(
                model="llama-3.1-8b",
                kind="pretrain",
                seq_len=8192,
                config=RunConfig(stack=stack, tp=1, pp=1, zero=3, recompute="full"),
            )
            out = predict(knowledge, w, "h100-sxm", 8, efficiency=model)
            assert out.throughput is not None and out.throughput.p10 and out.throughput.p90
            out_spans[stack], notes[stack] = out.throughput.p90 / out.throughput.p10, list(out.notes)
        return out_spans, notes

    wide, notes = spans(1.0)
    assert math.log(wide["fsdp"]) > 1.5 * math.log(wide["torchtitan"])  # twice as wide in log, less bounds
    assert any("interval 2.0x as wide: an eager stack" in n for n in notes["fsdp"])
    assert not any("as wide" in n for n in notes["torchtitan"])  # one server, compiled: nothing unknown
    same, notes = spans(0.0)
    assert same["fsdp"] == pytest.approx(same["torchtitan"], rel=0.35)  # only the stacks' own offsets differ
    assert same["fsdp"] < wide["fsdp"]
    assert not any("as wide" in n for n in notes["fsdp"] + notes["torchtitan"])


@pytest.mark.xfail(
    strict=True,
    reason="stop 42 (branch intervals43): the interval chosen with the distance term and the development "
    "sets (each family's mean over its sources and the development sources' held to 80-90%) covers, held out "
    "by source, vendor 91% of 286 (source-balanced 79%: MosaicML 99%, Megatron-Bridge 62%, torchtitan 65%), "
    "papers 100% of 17, independent 76% of 62 (source-balanced 68%: nanotron 62%, TinyLlama's one run 0%); "
    "stop 41: vendor 94%, papers 71%, independent 77% (docs/accuracy.md, stop 42)",
)
def test_the_shipped_interval_covers_every_family_near_the_band() -> None:
    # The shipped model's own held-out figures (`gpu-advisor model train` writes them): each family of source
    # with 10 or more runs covered by the interval a user is shown, each source held out. The two large
    # families are held to the 75-90% goal; the papers' 17 runs move 6 points a run, so they are held only
    # to cover at least 70%.
    meta = tomllib.loads((ROOT / "knowledge" / "efficiency_model.meta.toml").read_text(encoding="utf-8"))
    cv = meta["cv"]
    seen = 0
    for family in ("vendor", "paper", "report", "independent"):
        line = cv.get(f"llm by source / family: {family}")
        if line is None or line["rows"] < 10:
            continue
        seen += 1
        low, high = (0.75, 0.905) if line["rows"] >= 50 else (0.70, 1.0)
        assert low <= line["coverage_p10_p90"] <= high, (family, line["coverage_p10_p90"])
    assert seen >= 3


def _rows_by_stack(spread: float) -> tuple[list, dict[int, float]]:
    """Six sources, ten runs each: three of compiled stacks (vendor), three of eager ones (independent), whose
    residuals scatter spread times as far around the same P50."""
    from types import SimpleNamespace

    rows, typical = [], {}
    for k in range(6):
        compiled = k % 2 == 0
        for j in range(10):
            resid = 0.03 * (j - 4.5) * (1.0 if compiled else spread) + 0.01 * (k - 2.5)
            rows.append(
                SimpleNamespace(
                    efficiency=0.5 * math.exp(resid),
                    composed=False,
                    features=_features(1.0 if compiled else 0.0, 0.0),
                    row=SimpleNamespace(
                        origin=f"s{k}", source_family="vendor" if compiled else "independent"
                    ),
                )
            )
            typical[len(rows) - 1] = math.log(0.5)
    return rows, typical


def test_the_widening_is_chosen_where_eager_runs_scatter_further() -> None:
    from advisor.learned.efficiency.llm_eval import COVER_BAND, by_source, levels_for, offsets, width

    def cover(rows, typical, levels, widen) -> dict[str, float]:  # each source against the others' offsets
        got: dict[str, list[bool]] = {}
        for key in sorted({r.row.origin for r in rows}):
            lo, hi = offsets(rows, typical, by_source, (key,), levels, widen)
            for i, r in enumerate(rows):
                if r.row.origin == key:
                    k, resid = width(r, widen), math.log(r.efficiency) - typical[i]
                    got.setdefault(r.row.source_family, []).append(lo * k - 1e-12 <= resid <= hi * k + 1e-12)
        return {f: sum(v) / len(v) for f, v in got.items()}

    rows, typical = _rows_by_stack(4.0)
    levels, chosen = levels_for(rows, typical, by_source)  # type: ignore[arg-type]
    widen = chosen.unknown
    assert widen > 0.0
    assert all(COVER_BAND[0] <= c <= COVER_BAND[1] for c in cover(rows, typical, levels, widen).values())
    # One width for both: the levels that hold the eager runs' family cover every compiled run.
    unwidened = cover(rows, typical, levels, 0.0)
    assert unwidened["vendor"] > COVER_BAND[1] or unwidened["independent"] < COVER_BAND[0]
    # The same spread on every stack: nothing to widen by.
    rows, typical = _rows_by_stack(1.0)
    assert levels_for(rows, typical, by_source)[1].unknown == 0.0  # type: ignore[arg-type]


def test_how_far_a_plan_lies_from_what_was_measured() -> None:
    # One for each thing of a plan no training run measured: a stack fewer than two sources measured, a GPU
    # no run used, fine-tuning, a mixture of experts, a sequence past the attention table's 16,384 tokens.
    from advisor.learned.efficiency.linear import MEASURED_SEQ, Plan, distance

    x = _features(1.0, 1.0)
    near = Plan("megatron", "h100-sxm", False, 4096)
    assert distance(x, near, stack_sources=8, gpu_measured=True) == 0.0
    assert distance(x, near, stack_sources=1, gpu_measured=True) == 1.0
    far = Plan("trl", "rtx-4090", True, MEASURED_SEQ * 2)
    moe = list(x)
    moe[FEATURES.index("moe")] = 1.0
    assert distance(moe, far, stack_sources=0, gpu_measured=False) == 5.0
    assert distance(x, Plan(), stack_sources=0, gpu_measured=False) == 0.0  # nothing said of the plan


def test_the_interval_reads_the_distance_the_training_chose(knowledge) -> None:
    from advisor.learned.efficiency.learned import load_learned
    from advisor.learned.efficiency.linear import Plan
    from advisor.learned.efficiency.prior import PriorEfficiency

    shipped = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    assert shipped is not None and shipped.model.linear is not None
    linear = shipped.model.linear
    assert linear.measured_gpus and "megatron" in linear.stack_sources  # what the training runs measured
    again = LinearLogModel.from_dict(linear.to_dict())
    assert (again.widen_far, again.stack_sources, again.measured_gpus) == (
        linear.widen_far,
        linear.stack_sources,
        linear.measured_gpus,
    )
    x = _features(1.0, 1.0)
    near = Plan("megatron", "h100-sxm", False, 4096)
    far = Plan("axolotl", "rtx-4090", True, 4096)
    assert linear.far(x, near) == []
    assert len(linear.far(x, far)) == 3
    lo, hi = linear.interval
    k = 1.0 + 3 * linear.widen_far
    assert linear.interval_of(x, far) == pytest.approx((lo * k, hi * k))
    assert linear.interval_of(x, near) == pytest.approx((lo, hi))
    # An artefact from before the distance term: it is not read.
    older = {k: v for k, v in linear.to_dict().items() if k not in ("measured_gpus", "interval_widen_far")}
    assert LinearLogModel.from_dict(older).interval_of(x, far) == pytest.approx((lo, hi))
    with pytest.raises(ValueError, match="widening"):
        LinearLogModel.from_dict({**linear.to_dict(), "interval_widen_far": -0.5})


def test_the_development_sets_are_read_only_where_named(knowledge, tmp_path) -> None:
    from advisor.learned.efficiency.development import (
        DEVELOPMENT_ORIGIN,
        DEVELOPMENT_SETS,
        development_samples,
        run_of_development_record,
    )

    named = ("heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8")
    assert (*named, "heldout9") == DEVELOPMENT_SETS  # a sealed set stays out until scored and named
    runs = development_samples(knowledge)
    assert len(runs) > 200
    assert {s.row.origin.split(":")[1] for s in runs} <= set(DEVELOPMENT_SETS)
    assert all(s.row.origin.startswith(DEVELOPMENT_ORIGIN) for s in runs)
    assert any(s.row.spec is not None for s in runs)  # a model given by its shape is read too
    assert development_samples(knowledge, tmp_path) == []  # no benchmarks/: no development family
    row = {"model": "llama-3.1-8b", "workload": "lora", "lora_rank": "16", "gpu": "h100-sxm", "count": "8"}
    assert run_of_development_record(knowledge, "heldout", row) is None  # LoRA: the learned model's prior


def test_the_development_family_widens_the_plans_far_from_what_was_measured() -> None:
    # Six training sources on one GPU sit tight; the development runs on a GPU no training run used scatter
    # three times as far. Without them nothing asks for a distance term; with them the choice widens those
    # plans (and only those) until the development sources are covered too.
    from types import SimpleNamespace

    from advisor.learned.efficiency.llm_eval import Development, by_source, levels_for, offsets, width

    rows, typical = _rows_by_stack(1.0)
    for r in rows:
        r.row.gpu = "h100-sxm"
    dev, dev_typical = [], {}
    for k in range(4):
        for j in range(10):
            resid = 0.09 * (j - 4.5) + 0.01 * (k - 1.5)
            dev.append(
                SimpleNamespace(
                    efficiency=0.5 * math.exp(resid),
                    composed=False,
                    features=_features(1.0, 0.0),
                    row=SimpleNamespace(origin=f"development:heldout:d{k}", gpu="rtx-4090"),
                )
            )
            dev_typical[len(dev) - 1] = math.log(0.5)
    assert levels_for(rows, typical, by_source)[1].far == 0.0  # type: ignore[arg-type]
    levels, chosen = levels_for(rows, typical, by_source, (), Development(dev, dev_typical))  # type: ignore[arg-type]
    assert chosen.far > 0.0
    lo, hi = offsets(rows, typical, by_source, (), levels, chosen)  # type: ignore[arg-type]
    shares = []
    for k in range(4):
        got = [
            lo * width(s, chosen.unknown, chosen.far, 1.0)
            <= math.log(s.efficiency / 0.5)
            <= hi * width(s, chosen.unknown, chosen.far, 1.0)
            for s in dev
            if s.row.origin.endswith(f"d{k}")
        ]
        shares.append(sum(got) / len(got))
    assert 0.75 <= sum(shares) / 4 <= 0.9
