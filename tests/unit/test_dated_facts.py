"""Unit tests of the facts issue 21 found wrong: GCP storage units, Blackwell TF32 and release dates, the
mixed-precision advice, and the dates of purchase prices."""

from __future__ import annotations

import datetime as dt

import pytest

from advisor.catalog.loader import Knowledge
from advisor.rules import evaluate
from advisor.storage import load_storage, storage_price

GIB_PER_GB = 2**30 / 1e9


def test_gcp_storage_is_per_gb_not_per_gib(knowledge: Knowledge) -> None:
    # GCP bills per GiB: $0.02 per GiB-month (Cloud Storage Standard) and $0.17 (SSD PD) are stored per GB.
    gcs = storage_price(knowledge, "gcp", "object")
    pd = storage_price(knowledge, "gcp", "block")
    assert gcs is not None and pd is not None
    assert gcs.usd_per_gb_month == pytest.approx(0.02 / GIB_PER_GB, abs=1e-6)
    assert pd.usd_per_gb_month == pytest.approx(0.17 / GIB_PER_GB, abs=1e-6)
    assert "GiB" in gcs.note and "GiB" in pd.note
    data = load_storage(knowledge)
    dated = {key: src.date for key, src in data.sources.items()}
    for row in data.storage:
        if row.provider == "gcp":
            assert dated[row.source] is not None and dated[row.source] >= dt.date(2026, 1, 1), row


def test_b300_tf32_equals_b200(knowledge: Knowledge) -> None:
    b200, b300 = knowledge.gpu("b200"), knowledge.gpu("b300")
    assert b300.tflops.tf32 == b200.tflops.tf32 == 1125.0
    assert b300.tflops.tf32 == b300.tflops.bf16 / 2  # TF32 runs at half the 16-bit rate


@pytest.mark.parametrize(
    "gpu, date", [("gb200", "2025-02-15"), ("gb300", "2025-08-22"), ("b300", "2025-08-22")]
)
def test_blackwell_release_dates_from_epoch(knowledge: Knowledge, gpu: str, date: str) -> None:
    g = knowledge.gpu(gpu)
    assert g.release_date == dt.date.fromisoformat(date)
    assert g.field_sources["release_date"] == "epoch"
    assert "release_date" not in g.missing


def test_h200_release_date_is_epochs(knowledge: Knowledge) -> None:
    # Epoch's 'NVIDIA H200 SXM' row (the cited source) gives 2024-11-18.
    assert knowledge.gpu("h200").release_date == dt.date(2024, 11, 18)


def _advice(knowledge: Knowledge, precision: str, gpu: str = "h100-sxm") -> dict[str, str]:
    facts = {"workload.training": True, "plan.precision": precision, "gpu.id": gpu}
    fired = evaluate(knowledge.rules.rule, facts)
    return {r.rule_id: r.message for r in fired if r.rule_id.startswith("advise-mixed-precision")}


def test_mixed_precision_advice_says_against_what(knowledge: Knowledge) -> None:
    tf32 = _advice(knowledge, "tf32")
    assert list(tf32) == ["advise-mixed-precision"]
    assert "2x the TF32" in tf32["advise-mixed-precision"]
    fp32 = _advice(knowledge, "fp32")
    assert list(fp32) == ["advise-mixed-precision-fp32"]
    text = fp32["advise-mixed-precision-fp32"]
    assert "15-16x" in text and "A100/H100" in text
    # The figures it quotes are the catalogue's own dense peaks.
    for gid, ratio in (("a100-80gb-sxm", 16.0), ("h100-sxm", 14.8)):
        t = knowledge.gpu(gid).tflops
        assert t.bf16 / t.fp32 == pytest.approx(ratio, abs=0.1)
        assert t.bf16 / t.tf32 == pytest.approx(2.0, abs=0.01)
    assert _advice(knowledge, "bf16") == {}
