"""Unit tests of the facts issue 21 found wrong: GCP storage units, Blackwell TF32 and release dates, the
mixed-precision advice, and the dates of purchase prices."""

from __future__ import annotations

import datetime as dt

import pytest

from advisor.catalog.loader import Knowledge
from advisor.catalog.rules import evaluate
from advisor.catalog.storage import load_storage, storage_price

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


# Each Lambda purchase price and the commit that wrote it (lambdal/deeplearning-benchmark history).
WRITTEN = {
    "v100-16gb": ("2023-01-12", "08d77c41c42f48de5598b48c77f3fbd1b6252348"),
    "a100-80gb-sxm": ("2023-01-12", "08d77c41c42f48de5598b48c77f3fbd1b6252348"),
    "h100-pcie": ("2023-01-12", "08d77c41c42f48de5598b48c77f3fbd1b6252348"),
    "rtx-4090": ("2023-01-12", "08d77c41c42f48de5598b48c77f3fbd1b6252348"),
    "a10": ("2023-02-11", "fdc88fdb7a2e5e48011159c8b1344d6effa2366f"),
    "gh200": ("2025-01-08", "e3c3fe31326ad81364e5acbc5b5662f50981b852"),
    "b200": ("2025-12-10", "ea1660634d48cfbee7b84a648a8adba1c6e43ef8"),
    "a40": ("2021-10-09", "0d7fd3ed45171a907bb6fa6b93ea3f37759175ec"),
    "rtx-a4500": ("2022-06-30", "fe450482b982f1790e05e0bd57724a3f692b2d0f"),
}


@pytest.mark.parametrize("gpu", sorted(WRITTEN))
def test_purchase_prices_dated_when_written(knowledge: Knowledge, gpu: str) -> None:
    date, commit = WRITTEN[gpu]
    price = knowledge.gpu(gpu).price
    assert price is not None and price.date == dt.date.fromisoformat(date)
    src = knowledge.source(price.source)
    assert src is not None and src.date == price.date and commit in src.ref
    assert knowledge.gpu(gpu).field_sources["price"] == price.source


def test_no_price_claims_the_snapshot_date(knowledge: Knowledge) -> None:
    # The HEAD snapshot of 2025-12-17 and the 2022-07-06 snapshot are when files were read, not written.
    for g in knowledge.gpus:
        if g.price:
            assert g.price.source not in ("lambda-2025", "lambda-2025-v1v2", "lambda-2022"), g.id
            src = knowledge.source(g.price.source)
            if g.price.source == "epoch":  # Epoch's release price: dated by the release
                assert g.price.date == g.release_date and g.price.kind == "list", g.id
            else:
                assert src is not None and src.date == g.price.date, g.id


def test_price_age_and_old_mark(knowledge: Knowledge) -> None:
    now = dt.date(2026, 12, 1)
    v100 = knowledge.gpu("v100-16gb").price
    h100 = knowledge.gpu("h100-sxm").price
    assert v100 is not None and h100 is not None
    assert v100.is_old(now) and v100.age_months(now) == pytest.approx(46.6, abs=0.1)
    assert not h100.is_old(now) and h100.kind == "street"
    assert v100.label(now) == "estimate of 2023-01-12, old: 47 months"
    assert h100.label(now) == "street price of 2026-05-25"


def test_gpus_table_shows_the_date_and_old(knowledge: Knowledge, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.cli.render import gpus_table

    monkeypatch.setenv("GPU_ADVISOR_TODAY", "2026-12-01")
    text = gpus_table(knowledge)
    rows = {line.split()[0]: line for line in text.splitlines() if line.strip()}
    assert rows["v100-16gb"].rstrip().endswith("$9,938 2023-01-12 old")
    assert rows["h100-sxm"].rstrip().endswith("$27,500 2026-05-25")
    assert "(2025)" not in text
    old = sum(1 for g in knowledge.gpus if g.price and g.price.is_old())
    assert f"{old} are older than 24 months" in text


def test_tco_says_the_price_date_and_flags_an_old_one(
    knowledge: Knowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    from advisor.ops.tco import TcoInputs, tco

    monkeypatch.setenv("GPU_ADVISOR_TODAY", "2026-12-01")
    old = tco(knowledge, TcoInputs(gpu="h100-pcie", count=8, years=3))
    hardware = next(c for c in old.lines if c.component == "hardware")
    assert "estimate of 2023-01-12, old: 47 months" in hardware.basis
    assert any("written on 2023-01-12" in n.text for n in old.notes)
    fresh = tco(knowledge, TcoInputs(gpu="h100-sxm", count=8, years=3))
    hardware = next(c for c in fresh.lines if c.component == "hardware")
    assert "street price of 2026-05-25" in hardware.basis
    assert not any("written on" in n.text for n in fresh.notes)
