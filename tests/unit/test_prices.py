"""Tests of the price refresh (SkyPilot v8 format), the staleness limit and region outliers."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from advisor.catalog.loader import all_offers
from advisor.catalog.prices import Offer, load_user_prices, user_prices_path
from advisor.catalog.prices_update import build_update, gpu_id, parse_catalogue, read_folder
from advisor.cli.main import main
from advisor.job.inputs import Constraints
from advisor.search.cost import outlier_medians, price_notes, screen_offers

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "skypilot-v8"
TODAY = "2026-11-30"


@pytest.fixture(autouse=True)
def pinned_today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ADVISOR_TODAY", TODAY)


def test_fixture_parses_with_unknown_names_listed_not_guessed(knowledge) -> None:
    texts = read_folder(FIXTURE, ("aws", "gcp", "lambda"))
    update = build_update(knowledge, texts, "fixture")
    aws = update.parsed["aws"]
    assert aws.unknown == {"T4g": 1} and not aws.invalid
    assert all(o.date == dt.date(2026, 11, 30) and o.source == "fixture" for o in update.prices.offers)
    p5 = [o for o in aws.offers if o.instance == "p5.48xlarge" and o.region == "us-east-1"]
    assert {o.pricing for o in p5} == {"on-demand", "spot"}
    spot = next(o for o in p5 if o.pricing == "spot")
    assert spot.usd_per_hour == pytest.approx(21.1543)  # median of the three us-east-1 zones
    lam = {o.instance: o.gpu for o in update.parsed["lambda"].offers}
    assert lam == {
        "gpu_1x_h100_pcie": "h100-pcie",
        "gpu_8x_h100_sxm5": "h100-sxm",
        "gpu_1x_a100": "a100-40gb-pcie",
    }
    folded = next(o for o in update.parsed["lambda"].offers if o.instance == "gpu_8x_h100_sxm5")
    assert "2 regions" in folded.note  # same price in us-east-1 and us-west-1: one offer
    assert all(not o.includes_host for o in update.parsed["gcp"].offers)  # GCP prices the host VM apart


def test_invalid_rows_are_skipped_and_named(knowledge) -> None:
    text = (
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Region,Price,SpotPrice\n"
        "p5.48xlarge,H100,8,192,2048,us-east-1,abc,\n"
        "p5.48xlarge,H100,0.5,192,2048,us-east-1,55.04,\n"
        "p5.48xlarge,H100,8,192,2048,us-east-1,55.04,\n"
    )
    parsed = parse_catalogue("aws", text, "vms.csv", knowledge, "test")
    assert len(parsed.invalid) == 2 and parsed.invalid[0].startswith("vms.csv:2:")
    assert len(parsed.offers) == 1


def test_name_mapping_uses_form_factor_hints(knowledge) -> None:
    known = knowledge
    assert (
        gpu_id("runpod", "A100-80GB", "1x_A100-80GB_SECURE", "{'Name': 'A100 PCIe'}", known)
        == "a100-80gb-pcie"
    )
    assert gpu_id("aws", "A100", "p4d.24xlarge", "", known) == "a100-40gb-sxm"
    assert gpu_id("aws", "Gaudi3", "x", "", known) is None
    # Read from the catalogue's aliases, as the launch artefacts read them (issue 29).
    assert gpu_id("runpod", "RTXA5000", "1x_RTXA5000_SECURE", "", known) == "rtx-a5000"
    assert gpu_id("runpod", "H100-NVL", "1x_H100-NVL_SECURE", "", known) == "h100-nvl"


def test_update_then_prices_shows_the_new_dated_offers(knowledge, capsys) -> None:
    assert main(["prices", "update", "--from", str(FIXTURE), "--dry-run"]) == 0
    assert not user_prices_path().exists()
    assert "T4g" in capsys.readouterr().out
    assert main(["prices", "update", "--from", str(FIXTURE)]) == 0
    saved = load_user_prices()
    assert saved is not None and saved.fetched == dt.date(2026, 11, 30)
    assert json.loads(user_prices_path().read_text())["schema_version"] == 1
    capsys.readouterr()
    assert main(["prices", "--gpu", "h100-sxm", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    fresh = [r for r in rows if r["date"] == TODAY]
    assert {r["provider"] for r in fresh} == {"aws", "gcp", "lambda"}
    superseded = [r for r in rows if "superseded" in r["flags"]]
    assert any(r["instance"] == "p5.48xlarge" for r in superseded)  # the snapshot's p5 prices give way
    central = next(
        r
        for r in fresh
        if r["region"] == "us-central1" and r["instance"] == "H100x1" and r["pricing"] == "on-demand"
    )
    assert any(f.startswith("region outlier") for f in central["flags"])  # $4.20 against a $10.42 median


def test_offline_update_fails_in_one_line_and_keeps_prices(knowledge, monkeypatch, capsys) -> None:
    import urllib.request

    assert main(["prices", "update", "--from", str(FIXTURE)]) == 0
    before = user_prices_path().read_text()

    def offline(*_a, **_k):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    capsys.readouterr()
    assert main(["prices", "update"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "old prices kept" in err
    assert user_prices_path().read_text() == before


def test_missing_folder_is_a_one_line_error(capsys) -> None:
    assert main(["prices", "update", "--from", "/no/such/dir"]) == 2
    assert "no such folder" in capsys.readouterr().err


def _offer(region: str, usd: float, date: dt.date = dt.date(2026, 6, 1)) -> Offer:
    return Offer(
        provider="p",
        region=region,
        instance="x1",
        gpu="h100-sxm",
        gpus=1,
        pricing="on-demand",
        usd_per_hour=usd,
        date=date,
        source="s",
    )


def test_outliers_are_regions_far_from_the_instance_median() -> None:
    offers = [_offer("a", 4.2), _offer("b", 9.8), _offer("c", 11.0), _offer("d", 12.7)]
    flagged = outlier_medians(offers)
    assert set(flagged) == {id(offers[0])} and flagged[id(offers[0])] == pytest.approx(10.4)


def test_stale_offers_are_excluded_and_counted(knowledge) -> None:
    gpu = knowledge.gpu("h100-sxm")
    screened = screen_offers(knowledge, gpu, Constraints())
    assert screened.stale and all((dt.date(2026, 11, 30) - o.date).days > 365 for o in screened.stale)
    assert all((dt.date(2026, 11, 30) - o.date).days <= 366 for o in screened.usable)
    wider = screen_offers(knowledge, gpu, Constraints(max_price_age_months=48))
    assert len(wider.usable) > len(screened.usable)
    notes = price_notes(knowledge, [gpu], Constraints())
    assert (
        notes and "older than 12 months excluded" in notes[0].text and "no fresh price from" in notes[0].text
    )
    assert notes[0].field == "max_price_age_months"  # the input that changes it: each front end names it


def test_recommend_prices_on_fresh_offers_and_says_how_many_it_excluded(capsys) -> None:
    assert (
        main(
            [
                "recommend",
                "--model",
                "resnet50",
                "--samples",
                "200k",
                "--epochs",
                "30",
                "--objective",
                "cheapest",
                "--format",
                "json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    top = report["plans"][0]["price"]
    assert (dt.date(2026, 11, 30) - dt.date.fromisoformat(top["date"])).days <= 365
    assert any("older than 12 months excluded" in n["text"] for n in report["notes"])


def test_all_offers_ignores_an_unreadable_user_file(knowledge) -> None:
    user_prices_path().parent.mkdir(parents=True, exist_ok=True)
    user_prices_path().write_text("{not json")
    assert len(all_offers(knowledge)) == len(knowledge.offers)
