"""Tests of the corrected facts: tensor-core peaks, topology, the checklist, storage prices and the field
guide's own figures (worked example, cost table, case study) as `gpu-advisor cost` shows them."""

from __future__ import annotations

import json

import pytest

from advisor.answer.scenarios import CASE_STUDY, case_study, cost_table, guide_example, scenario_inputs
from advisor.catalog.gpus import TENSOR_DTYPES
from advisor.catalog.storage import load_storage, storage_cost, storage_price
from advisor.cli.main import main

TRAINING_DTYPES = ("fp16", "bf16", "tf32")


def test_every_tensor_dtype_has_a_peak_or_a_reason(knowledge) -> None:
    for gpu in knowledge.gpus:
        dtypes = TENSOR_DTYPES.get(gpu.architecture.lower())
        if dtypes is None:
            assert gpu.vendor != "nvidia", gpu.id
            continue
        unsourced = gpu.peak_tflops("fp16") is None  # a part with no tensor figure at all (rtx-a5500)
        for dtype in dtypes:
            if gpu.peak_tflops(dtype) is not None:
                continue
            assert f"tflops.{dtype}" in gpu.missing, f"{gpu.id}: no {dtype} peak and no reason"
            # A training dtype may only be missing where the GPU has no sourced tensor figure at all.
            assert dtype not in TRAINING_DTYPES or unsourced, f"{gpu.id}: training dtype {dtype} unsourced"


def test_spec_corrections(knowledge) -> None:
    a10g = knowledge.gpu("a10g")
    assert a10g.tdp_w == 300 and a10g.peak_tflops("bf16") and a10g.peak_tflops("tf32")
    assert knowledge.gpu("rtx-3090").peak_tflops("bf16") == 71.0
    assert knowledge.gpu("l40s").peak_tflops("int8") is not None
    for v100 in ("v100-16gb", "v100-32gb"):
        assert knowledge.gpu(v100).interconnect.kind == "nvlink-mesh"
    for pcie in ("a100-40gb-pcie", "a100-80gb-pcie", "h100-pcie"):
        assert knowledge.gpu(pcie).interconnect.kind == "pcie" and knowledge.gpu(pcie).nvlink_domain == 1


def test_predict_rtx3090_bf16(capsys) -> None:
    assert main(["predict", "--gpu", "rtx-3090", "--precision", "bf16", "--model", "resnet50"]) == 0
    assert "bf16" in capsys.readouterr().out


def test_checklist_has_the_missing_errors(knowledge) -> None:
    ids = {e.id for e in knowledge.checklist}
    assert len(ids) >= 20
    for new in (
        "cuda-illegal-access",
        "host-oom",
        "gpu-not-visible",
        "cloud-capacity",
        "fabric-manager",
        "pcie-link-p2p",
        "straggler-ranks",
        "checkpoint-write-failure",
        "throughput-regression",
        "gsp-xid-119-120",
        "nccl-ib-errors",
    ):
        assert new in ids
        entry = next(e for e in knowledge.checklist if e.id == new)
        assert entry.symptoms and entry.sources and any(s.command for s in entry.steps), new
        for key in entry.sources:
            src = knowledge.source(key)
            assert src is not None and (src.url or src.ref), (new, key)


def test_storage_prices_are_sourced(knowledge) -> None:
    data = load_storage(knowledge)
    assert {(s.provider, s.kind) for s in data.storage} >= {
        ("aws", "object"),
        ("aws", "block"),
        ("gcp", "object"),
    }
    s3 = storage_price(knowledge, "aws", "object")
    assert s3.usd_per_gb_month == 0.023
    assert storage_cost(s3, 1000, 730) == pytest.approx(23.0)  # $0.023 is per GB-month: 1 TB-month is $23


def test_guide_example_corrected(knowledge, capsys) -> None:
    g = guide_example(knowledge)
    assert g.gpu_part == pytest.approx(282.24) and g.total == pytest.approx(404.024)
    assert g.stated_gpu_part == 207.84 and g.stated_total == 280.83
    assert main(["cost", "--guide-example"]) == 0
    out = capsys.readouterr().out
    assert "282.24" in out and "404.02" in out and "207.84" in out


def test_cost_table_shows_its_error_and_the_market(knowledge) -> None:
    rows = {r.name: r for r in cost_table(knowledge)}
    assert rows["standard"].base_usd_per_gpu_hour == pytest.approx(3200 / 730, abs=1e-3)  # $4.38/h
    high = rows["high performance"]
    assert high.range[1] == pytest.approx(33320) and high.stated_range[1] == 33160 and high.error
    assert rows["standard"].market_usd_per_gpu_hour is not None


def test_cost_on_users_numbers(capsys) -> None:
    assert (
        main(
            [
                "cost",
                "--gpu-usd-hour",
                "0.98",
                "--gpus",
                "4",
                "--hours",
                "72",
                "--volatility",
                "1.35",
                "--storage-gb",
                "1000",
                "--storage-months",
                "1",
                "--format",
                "json",
            ]
        )
        == 0
    )
    r = json.loads(capsys.readouterr().out)
    assert r["total"][1] == pytest.approx(404.024)
    assert main(["cost", "--gpus", "4"]) == 2
    assert "--gpu-usd-hour" in capsys.readouterr().err


def test_case_study_as_stated_and_today(knowledge, capsys) -> None:
    c = case_study(knowledge)
    assert c.implied_usd_per_gpu_hour_after == pytest.approx(3800 / 72, abs=0.01)  # about $53/GPU-h
    assert c.stated["hours_before"] == 72 and c.stated["hours_after"] == 18 and c.stated["cache_tb"] == 200
    assert c.today_usd_after is not None and c.today_usd_after < 3800
    assert c.cache_usd_month == pytest.approx(200_000 * 0.08)
    assert main(["cost", "--scenario", CASE_STUDY]) == 0
    assert "52.78" in capsys.readouterr().out
    assert main(["cost", "--scenario", "nope"]) == 2


def test_scenario_inputs_for_the_ui(knowledge) -> None:
    workload, constraints = scenario_inputs(knowledge, CASE_STUDY)
    assert workload.model == "resnet50" and workload.dataset_gb == 200_000
    assert constraints.gpus == ("a100-40gb-sxm",) and constraints.max_gpus == 4
