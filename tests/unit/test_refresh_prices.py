"""Unit tests of the shipped price snapshot's freshness and of scripts/refresh_prices.py, which rewrites it
from dated catalogues (run on temporary copies: no tracked file is written)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

from advisor.catalog.loader import Knowledge
from advisor.catalog.prices import age_months
from advisor.cli.render import prices_table, snapshot_note
from advisor.search.cost import newest_only, offer_flags

ROOT = Path(__file__).resolve().parents[2]
MAJOR = ("aws", "gcp", "azure", "lambda", "oci", "runpod")


def _script():
    spec = importlib.util.spec_from_file_location("refresh_prices", ROOT / "scripts" / "refresh_prices.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["refresh_prices"] = module
    spec.loader.exec_module(module)
    return module


def test_every_major_provider_has_a_fresh_h100(knowledge: Knowledge) -> None:
    now = dt.date(2026, 12, 1)
    current = newest_only(list(knowledge.offers))
    for provider in MAJOR:
        fresh = [
            o
            for o in current
            if o.provider == provider and o.gpu.startswith("h100") and age_months(o.date, now) <= 12
        ]
        assert fresh, provider
        assert any(o.pricing == "on-demand" for o in fresh), provider


def test_refreshed_offers_carry_their_sources_date(knowledge: Knowledge) -> None:
    for key in ("skypilot-oci", "cyclenerd-gcp-2026-07"):
        src = knowledge.source(key)
        assert src is not None and src.date is not None and "@" in src.ref
        rows = [o for o in knowledge.offers if o.source == key]
        assert rows and all(o.date == src.date for o in rows), key
    gcp = [o for o in knowledge.offers if o.source == "cyclenerd-gcp-2026-07"]
    h100 = [o for o in gcp if o.instance == "a3-highgpu-8g" and o.region == "us-central1"]
    plans = {o.pricing: o.usd_per_hour for o in h100}
    assert plans["on-demand"] == pytest.approx(88.49)
    assert plans["reserved-1y"] == pytest.approx(44810.08066464 / 730, abs=1e-3)  # month_1y / 730 h
    assert plans["reserved-3y"] < plans["reserved-1y"] < plans["on-demand"]


def test_prices_listing_says_when_and_how_to_refresh(knowledge: Knowledge) -> None:
    offers = [o for o in knowledge.offers if o.gpu == "h100-sxm"]
    text = prices_table(offers, offer_flags(offers, 12.0), 12.0)
    assert "Prices as of (newest offer per provider" in text
    assert "gcp 2026-07-30" in text and "oci 2026-09-18" in text
    assert "gpu-advisor prices update" in text
    assert snapshot_note([]) == ""


HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
    "AvailabilityZone"
)
OCI = (
    HEADER
    + """
BM.GPU.H100.8,H100,8,224,2048,"{'Gpus': []}",80,,us-chicago-1,US-CHICAGO-1-AD-3
BM.GPU.H100.8,H100,8,224,2048,"{'Gpus': []}",80,,us-phoenix-1,PHX-AD-1
BM.GPU.B300.8,B300,8,256,4096,"{'Gpus': []}",120,,us-chicago-1,US-CHICAGO-1-AD-3
BM.GPU.MI355X.8,MI355X,8,256,3072,"{'Gpus': []}",68.8,,us-chicago-1,US-CHICAGO-1-AD-3
VM.GPU3.1,V100,1,12,90,"{'Gpus': []}",2.95,1.475,us-chicago-1,US-CHICAGO-1-AD-3
"""
)

CYCLENERD = """
compute:
  instance:
    a3-highgpu-8g:
      cpu: 208
      h100-80gb: 8
      cost:
        us-central1: {hour: 88.49, hour_spot: 50.6, month: 64597.7, month_1y: 44810.0, month_3y: 28371.0}
        us-west1: {hour: 88.49, hour_spot: 50.6, month: 64597.7, month_1y: 44810.0, month_3y: 28371.0}
    g2-standard-4:
      l4: 1
      cost:
        us-central1: {hour: 0.7068, hour_spot: 0.3973}
    g2-standard-8:
      l4: 1
      cost:
        us-central1: {hour: 0.8536}
    g4-standard-48:
      rtx6000: 1
      cost:
        us-central1: {hour: 4.5}
    n2-standard-2:
      cpu: 2
      cost:
        us-central1: {hour: 0.09}
"""

PRICES = """schema_version = 1

[sources.old]
title = "old"
ref = "old"
date = 2025-11-27

[sources.oci-new]
title = "oci"
ref = "skypilot-org/skypilot-catalog@0588751183820cf2dab5c8a89447e8aac9f73fd5:catalogs/v8/oci/vms.csv"
date = 2026-09-18

[sources.gcp-new]
title = "gcp"
ref = "Cyclenerd/google-cloud-pricing-cost-calculator@fd66b26ff84fee5cdd94f341ea89206e76c06b99:pricing.yml"
date = 2026-07-30

[[offer]]
provider = "oci"
region = "unspecified"
instance = "BM.GPU.H100.8"
gpu = "h100-sxm"
gpus = 8
pricing = "on-demand"
usd_per_hour = 80.0
date = 2023-10-30
source = "old"

[[offer]]
provider = "gcp"
region = "us-central1"
instance = "a3-ultragpu-8g"
gpu = "h200"
gpus = 8
pricing = "on-demand"
usd_per_hour = 86.75992
date = 2025-11-27
source = "old"
"""


def test_refresh_script_rewrites_a_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("yaml")
    (tmp_path / "vms.csv").write_text(OCI)
    (tmp_path / "pricing.yml").write_text(CYCLENERD)
    target = tmp_path / "prices.toml"
    target.write_text(PRICES)
    args = [
        "--skypilot",
        f"oci={tmp_path / 'vms.csv'}@oci-new",
        "--cyclenerd",
        f"{tmp_path / 'pricing.yml'}@gcp-new",
        "--prices",
        str(target),
    ]
    assert _script().main(args) == 0
    out = capsys.readouterr().out
    assert "MI355X (1)" in out  # listed as unknown, never guessed
    offers = tomllib.loads(target.read_text())["offer"]
    by = {(o["provider"], o["instance"], o["pricing"], o["region"]): o for o in offers}
    # The 2023 OCI H100 row is superseded and dropped; the refreshed one carries its source's date.
    h100 = [o for o in offers if o["provider"] == "oci" and o["instance"] == "BM.GPU.H100.8"]
    assert len(h100) == 1 and h100[0]["date"] == dt.date(2026, 9, 18) and h100[0]["source"] == "oci-new"
    assert "same price in 2 regions" in h100[0]["note"]
    assert by[("oci", "BM.GPU.B300.8", "on-demand", "us-chicago-1")]["gpu"] == "b300"
    assert by[("oci", "VM.GPU3.1", "spot", "us-chicago-1")]["usd_per_hour"] == 1.475
    # GCP: regions at one price folded, committed use per hour, the cheapest L4 host only, no g4 (unmapped).
    a3 = by[("gcp", "a3-highgpu-8g", "reserved-1y", "us-central1")]
    assert a3["usd_per_hour"] == pytest.approx(44810.0 / 730, abs=1e-4)
    assert "us-west1" in a3["note"] and a3["date"] == dt.date(2026, 7, 30)
    assert ("gcp", "g2-standard-4", "on-demand", "us-central1") in by
    assert not any(o["instance"] in ("g2-standard-8", "g4-standard-48", "n2-standard-2") for o in offers)
    # Offers no refreshed row replaces are kept as they were.
    assert by[("gcp", "a3-ultragpu-8g", "on-demand", "us-central1")]["source"] == "old"
    # Running it again gives the same file (the refreshed sources' rows are replaced, not duplicated).
    first = target.read_text()
    assert _script().main(args) == 0
    assert target.read_text() == first


def test_refresh_script_needs_a_dated_source(tmp_path: Path) -> None:
    (tmp_path / "vms.csv").write_text(OCI)
    target = tmp_path / "prices.toml"
    target.write_text(PRICES)
    with pytest.raises(SystemExit, match=r"add \[sources\.nope\]"):
        _script().main(["--skypilot", f"oci={tmp_path / 'vms.csv'}@nope", "--prices", str(target)])
    assert target.read_text() == PRICES
