"""Issue 29: risk-aware ranking: a plan whose memory P90 passes the usable capacity never ranks above a safe
plan within the model's error on time and cost; balanced prefers fewer nodes within the error; the first place
explains itself."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from advisor.answer.recommend import recommend
from advisor.answer.risk import first_reason, memory_risky, risk_aware, within
from advisor.job.inputs import Constraints, Workload

ERROR = 0.2


def _plan(name: str, cost: float, hours: float, p90_gb: float, nodes: int = 1) -> SimpleNamespace:
    memory = SimpleNamespace(high_gb=p90_gb, usable_gb=100.0)
    layout = SimpleNamespace(nodes=nodes, count=8 * nodes)
    cand = SimpleNamespace(memory=memory, layout=layout, gpu=SimpleNamespace(id=name))
    return SimpleNamespace(
        name=name, cand=cand, cost=SimpleNamespace(mid=cost), time_key=hours, latency_s=None
    )


def test_risky_plan_yields_to_a_safe_one_within_the_error() -> None:
    risky, safe, far = _plan("risky", 100, 10, 120), _plan("safe", 110, 11, 90), _plan("far", 200, 30, 50)
    assert [p.name for p in risk_aware([risky, safe, far], "cheapest", ERROR)] == ["safe", "risky", "far"]


def test_risky_plan_keeps_its_place_beyond_the_error() -> None:
    risky, safe = _plan("risky", 100, 10, 120), _plan("safe", 130, 10, 90)  # 30% dearer: beyond 20%
    assert [p.name for p in risk_aware([risky, safe], "cheapest", ERROR)] == ["risky", "safe"]


def test_balanced_prefers_fewer_nodes_within_the_error() -> None:
    big, small = _plan("big", 100, 10, 50, nodes=12), _plan("small", 105, 11, 50, nodes=2)
    assert [p.name for p in risk_aware([big, small], "balanced", ERROR)] == ["small", "big"]
    assert [p.name for p in risk_aware([big, small], "cheapest", ERROR)] == ["big", "small"]


def test_safety_comes_before_fewer_nodes_and_the_order_is_a_ranking() -> None:
    plans = [
        _plan("a", 100, 10, 120, nodes=1),
        _plan("b", 105, 10.5, 90, nodes=8),
        _plan("c", 108, 10.8, 90, nodes=2),
        _plan("d", 300, 50, 90, nodes=1),
    ]
    order = [p.name for p in risk_aware(plans, "balanced", ERROR)]
    assert order == ["c", "b", "a", "d"]
    assert sorted(order) == ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def issue_reports(knowledge):
    w = Workload(model="llama-3.1-8b", kind="pretrain", tokens=100e9)
    return {
        objective: recommend(
            knowledge, w, Constraints(budget_usd=50000, deadline_hours=336, objective=objective)
        )
        for objective in ("balanced", "cheapest")
    }


def test_issue_questions_put_no_risky_plan_first(issue_reports) -> None:
    for report in issue_reports.values():
        first = report.plans[0]
        assert first.memory.per_gpu_gb_high <= first.memory.usable_gb, first.parallelism
        assert first.reasons[0].startswith("first: "), first.reasons[0]
        assert "within your deadline and your budget at P90" in first.reasons[0]
    assert issue_reports["cheapest"].plans[0].reasons[0].startswith("first: the cheapest P50 cost")


def test_first_reason_names_the_plan_it_moved_down() -> None:
    risky, safe = _plan("risky", 100, 10, 120), _plan("safe", 110, 11, 90)
    constraints = Constraints(deadline_hours=100, objective="cheapest")
    line = first_reason([safe, risky], [risky, safe], constraints, ERROR)
    assert line.startswith("first: the cheapest P50 cost within your deadline at P90; risky x8")
    assert "memory P90 120 GB passes the 100 GB usable" in line
    assert memory_risky(risky.cand.memory) and within(safe, risky, ERROR)


def _risk_aware_every_pair(ranked: list, objective: str, error: float) -> list:
    """risk_aware() as first written: every plan compared with every other (the reference)."""
    balanced = objective == "balanced"
    standing = [(int(memory_risky(s.cand.memory)), s.cand.layout.nodes if balanced else 0) for s in ranked]
    if len(set(standing)) < 2:
        return ranked
    place = [float(i) for i in range(len(ranked))]
    for i in sorted(range(len(ranked)), key=lambda i: (standing[i], place[i])):
        yields = [
            place[j]
            for j in range(len(ranked))
            if standing[j] < standing[i] and within(ranked[j], ranked[i], error)
        ]
        if yields and max(yields) > place[i]:
            place[i] = max(yields) + 1e-6 * (1 + place[i] / (len(ranked) + 1))
    return [ranked[i] for i in sorted(range(len(ranked)), key=lambda i: place[i])]


def test_risk_aware_compares_only_the_safer_plans_and_orders_as_every_pair_does() -> None:
    import random

    rng = random.Random(29)
    for trial in range(300):
        plans = [
            _plan(
                f"p{k}",
                rng.choice([100.0, 104.0, 110.0]) * rng.uniform(0.8, 1.6),
                rng.uniform(5, 15),
                rng.choice([60.0, 95.0, 101.0, 130.0]),
                nodes=rng.choice([1, 2, 4, 8]),
            )
            for k in range(rng.randint(1, 40))
        ]
        for objective in ("cheapest", "fastest", "balanced"):
            error = rng.choice([0.0, 0.1, 0.25])
            want = [p.name for p in _risk_aware_every_pair(plans, objective, error)]
            assert [p.name for p in risk_aware(plans, objective, error)] == want, (trial, objective)
