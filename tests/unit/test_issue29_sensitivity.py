"""Issue 29: what would change the answer: the value of an uncertain input at which a plan's place changes,
found by re-scoring and re-ranking; checked here by re-ranking on either side of it."""

from __future__ import annotations

import pytest

from advisor.answer.recommend import _rank, recommend, run_search, sensitivity_tools
from advisor.answer.sensitivity import change_line, failure_flip, flips, memory_flip
from advisor.job.inputs import Constraints, Workload

ISSUE = Workload(model="llama-3.1-8b", kind="pretrain", tokens=100e9)


@pytest.fixture(scope="module", params=["cheapest", "balanced"])
def tools(request, knowledge):
    c = Constraints(budget_usd=50000, deadline_hours=336, objective=request.param)
    search = run_search(knowledge, ISSUE, c)
    return sensitivity_tools(search, _rank(search.ctx, search.feasible), 5)


def _first_with(pool, rank, i, changed):
    trial = pool[:i] + ([changed] if changed is not None else []) + pool[i + 1 :]
    ranked = rank(trial)
    return ranked[0].key if ranked else None


@pytest.mark.parametrize("i", [0, 1, 2])
def test_each_flip_is_where_the_first_place_changes(tools, i) -> None:
    pool, rescore, rank = tools
    found = flips(pool, i, rescore, rank)
    assert found, "the issue's close plans flip within the ranges searched"
    for f in found:

        def at(x, f=f):
            return rescore(pool[i], x, 1.0) if f.what == "efficiency" else rescore(pool[i], 1.0, x)

        step = 1.003 if f.factor > 1 else 1 / 1.003  # 0.3%, beyond the bisection's 0.07%
        near = f.factor / step  # a little nearer 1: the order as it is
        past = f.factor * step  # a little past the flip: the other order
        before = _first_with(pool, rank, i, at(near)) == pool[i].key
        after = _first_with(pool, rank, i, at(past)) == pool[i].key
        assert before == (i == 0) and after == (i != 0), (f, before, after)


def test_a_memory_flip_moves_a_plan_whose_p90_then_crosses(tools) -> None:
    pool, _, rank = tools
    flip = memory_flip(pool, rank)
    if flip is not None:
        assert flip.factor > 1.0 and flip.first != f"{pool[0].cand.gpu.id} x{pool[0].cand.layout.count}"


def test_every_plan_has_a_would_change_line(knowledge) -> None:
    report = recommend(
        knowledge, ISSUE, Constraints(budget_usd=50000, deadline_hours=336, objective="cheapest")
    )
    for plan in report.plans:
        line = [r for r in plan.reasons if r.startswith("would change: ")]
        assert len(line) == 1, plan.reasons
    assert "ranks first" in next(r for r in report.plans[0].reasons if r.startswith("would change: "))


def test_no_flip_says_so(tools) -> None:
    pool, _, rank = tools

    def never(s, eff, price, failure=1.0):
        return s  # nothing changes the plan: no flip anywhere

    first = change_line(pool, 0, never, rank)
    assert "its efficiency" not in first and "its price" not in first
    assert "no efficiency from 0.5x to 2x" in change_line(pool, 1, never, rank)


def test_a_failure_rate_flip_is_where_the_first_place_changes(tools) -> None:
    """The failure rate is every plan's input: all are re-scored with it; checked on either side of it."""
    pool, rescore, rank = tools
    flip = failure_flip(pool, rescore, rank)
    if flip is None:
        pytest.skip("no failure rate from 0.1x to 10x moves the first place here")

    def first(f: float):
        trial = [x for x in (rescore(p, 1.0, 1.0, f) for p in pool) if x is not None]
        return rank(trial)[0].key

    assert first(flip.factor**0.98) == pool[0].key
    assert first(flip.factor**1.02) != pool[0].key


def test_failure_flip_on_plans_whose_cost_follows_their_gpus() -> None:
    """Two plans: the larger one loses more to interruptions; the rate at which it stops being first is
    where its cost (1 + 0.01 x GPUs x rate) passes the smaller one's."""
    from types import SimpleNamespace

    def plan(name: str, count: int, cost: float):
        cand = SimpleNamespace(gpu=SimpleNamespace(id=name), layout=SimpleNamespace(count=count))
        return SimpleNamespace(key=(name, count, 1), cand=cand, latency_s=None, cost=cost)

    big, small = plan("big", 1000, 100.0), plan("small", 10, 105.0)

    def rescore(s, eff, price, failure=1.0):
        return plan(
            s.cand.gpu.id, s.cand.layout.count, s.cost * (1 + 1e-4 * s.cand.layout.count * (failure - 1))
        )

    def rank(trial):
        return sorted(trial, key=lambda s: s.cost)

    flip = failure_flip([big, small], rescore, rank)
    assert flip is not None and flip.first == "small x10"
    # big: 100 (1 + 0.1 (f - 1)), small: 105 (1 + 0.001 (f - 1)): equal at f = 1.5052
    assert flip.factor == pytest.approx(1.5052, rel=1e-2)
