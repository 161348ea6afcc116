"""Issue 29: serving: hosted API against rent against buy, from dated, sourced API prices, with the monthly
volume where each becomes the cheaper (Llama 3.1 8B and 70B)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from advisor.answer.hosted import _crossover
from advisor.answer.recommend import recommend
from advisor.catalog.hosted_prices import api_prices, load_hosted
from advisor.job.inputs import Constraints, Workload


def test_rows_are_sourced_and_dated(knowledge) -> None:
    data = load_hosted(knowledge)
    assert data.api and all(a.source in data.sources for a in data.api)
    assert all(s.date is not None for s in data.sources.values())
    for model in ("llama-3.1-8b", "llama-3.1-70b"):
        assert len([a for a in data.api if a.model == model]) >= 5


def test_retired_rows_are_left_out(knowledge) -> None:
    before = {a.api_model for a in api_prices(knowledge, "llama-3.1-8b", dt.date(2026, 1, 1))}
    after = {a.api_model for a in api_prices(knowledge, "llama-3.1-8b", dt.date(2026, 12, 2))}
    assert "together_ai/meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo" in before - after  # retired 2026-03-06


def test_prompt_tokens_count_at_the_input_price(knowledge) -> None:
    a = next(a for a in load_hosted(knowledge).api if a.provider == "bedrock" and a.model == "llama-3.1-8b")
    assert a.per_m_output(512, 256) == pytest.approx(0.22 + 0.22 * 2)


def test_crossover_is_where_one_replica_costs_what_the_api_does() -> None:
    line = _crossover("renting", replica_month=1000.0, cap_m=10_000.0, p=0.5, output=256, month=730.0)
    assert "above 2,000M output tokens a month" in line  # 1000 / 0.5
    full = _crossover("renting", replica_month=1000.0, cap_m=1_000.0, p=0.5, output=256, month=730.0)
    assert "never" in full


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.1-70b"])
def test_serving_answers_compare_api_rent_and_buy(knowledge, model) -> None:
    report = recommend(
        knowledge, Workload(model=model, kind="inference", requests_per_s=20, tpot_ms=50), Constraints()
    )
    reasons = report.plans[0].reasons
    api = next(r for r in reasons if r.startswith("hosted APIs for "))
    assert "litellm" in api and "as of 2026-12-02" in api
    rent = next(r for r in reasons if r.startswith("renting vs API: "))
    assert re.search(r"above [\d,]+M output tokens a month|never the cheaper", rent)
    assert any(r.startswith("buy vs rent and API: ") for r in reasons)
