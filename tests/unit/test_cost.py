"""Unit tests of the cost model: the field guides' formula (corrected), offers, volatility and spot."""

from __future__ import annotations

import datetime as dt

import pytest

from advisor.catalog.prices import Offer
from advisor.job.inputs import Constraints
from advisor.search.cost import best_offer, guide_cost, plan_cost, spot_overhead, volatility


def test_guide_example_corrected() -> None:
    # The guide: ($0.98/h x 4 GPUs x 72 h) x 1.35 + 1 TB of storage. Its arithmetic says $207.84 and $280.83;
    # 0.98 x 4 x 72 is 282.24, and $0.023 is per GB-month, so 1 TB (1000 GB) for a month is $23.
    gpu_part = guide_cost(0.98, 4, 72, 1.0, 0, 0.023, 0)
    assert gpu_part == pytest.approx(282.24)
    total = guide_cost(0.98, 4, 72, 1.35, 1000, 0.023, 1)
    assert total == pytest.approx(282.24 * 1.35 + 23.0)
    assert total == pytest.approx(404.024)


def test_volatility_ranges_follow_the_guide(knowledge) -> None:
    a = knowledge.assumptions
    assert volatility(Constraints(demand="static"), a) == (1.0, 1.0, 1.0)
    assert volatility(Constraints(demand="fluctuating"), a)[::2] == (1.2, 1.5)
    assert volatility(Constraints(demand="high"), a)[::2] == (1.3, 1.7)


def test_plan_cost_is_a_range_with_prorated_storage(knowledge) -> None:
    a = knowledge.assumptions
    c = plan_cost((10.0, 20.0, 30.0), 8.0, Constraints(demand="fluctuating"), a, dataset_gb=730.0)
    storage = 0.023 * 730.0 / 730.0  # $/GB-month x GB x (hours / 730)
    assert c.low == pytest.approx(8.0 * 10 * 1.2 + storage * 10)
    assert c.mid == pytest.approx(8.0 * 20 * 1.35 + storage * 20)
    assert c.high == pytest.approx(8.0 * 30 * 1.5 + storage * 30)
    assert c.low < c.mid < c.high


def _offer(gpus: int, usd: float, instance: str) -> Offer:
    return Offer(
        provider="p",
        region="r",
        instance=instance,
        gpu="h100-sxm",
        gpus=gpus,
        pricing="on-demand",
        usd_per_hour=usd,
        date=dt.date(2026, 1, 1),
        source="s",
    )


def test_best_offer_bills_whole_instances_and_keeps_servers_whole() -> None:
    offers = [_offer(8, 80.0, "eight"), _offer(1, 12.0, "one")]
    one = best_offer(offers, 1, 8)
    assert one is not None and one.offer.instance == "one" and one.billed_gpus == 1
    # Two GPUs must share a server: single-GPU instances cannot serve it, the 8-GPU one is billed whole.
    two = best_offer(offers, 2, 8)
    assert two is not None and two.offer.instance == "eight" and two.billed_gpus == 8
    sixteen = best_offer(offers, 16, 8)
    assert sixteen is not None and sixteen.instances == 2 and sixteen.usd_per_hour == 160.0


def test_spot_overhead_grows_with_instances(knowledge) -> None:
    a = knowledge.assumptions
    one = spot_overhead(100.0, 1, a)
    many = spot_overhead(100.0, 16, a)
    assert 0 < one[0] < one[1] < one[2]
    assert many[1] == pytest.approx(16 * one[1])
