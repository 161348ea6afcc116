"""Unit tests of the caveats a plan carries (issue 20, believability): capacity not modelled, a benchmark's
batch, one serving replica, the fabric assumed between separate instances."""

from __future__ import annotations

import pytest

from advisor.answer.caveats import MANY_INSTANCES
from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, Workload


def checks(plan) -> list[str]:
    return [r for r in plan.reasons if r.startswith("check: ")]


@pytest.fixture(scope="module")
def finetune_cheap(knowledge):
    """A 7B pre-trained on 1T tokens within 60 days: plans of many separate instances."""
    return recommend(
        knowledge,
        Workload(model="llama-2-7b", kind="pretrain", tokens=1e12),
        Constraints(deadline_hours=24 * 60),
    )


def test_many_instances_say_what_capacity_is_documented(finetune_cheap) -> None:
    """Issue 29: a plan of many instances says the provider's documented capacity and reservation (with its
    source), or that none is stored."""
    many = [p for p in finetune_cheap.plans if p.price and p.price.instances > MANY_INSTANCES]
    assert many
    for plan in finetune_cheap.plans:
        said = [c for c in checks(plan) if " instances (" in c and "GPUs) from " in c]
        assert bool(said) == (plan in many), plan.parallelism
        if said:
            assert "availability is not modelled" in said[0] or "reserv" in said[0], said[0]


def test_separate_instances_state_the_network_they_are_timed_on(knowledge, finetune_cheap) -> None:
    """Each multi-instance plan names the network it is timed on: the bandwidth its provider documents (a
    reason, with the source), or a check naming the fabric assumed."""
    for plan in finetune_cheap.plans:
        multi = plan.price is not None and plan.price.instances > 1
        network = [r for r in plan.reasons if r.startswith("network: ")]
        said = [c for c in checks(plan) if "separate " in c and "timed " in c]
        assert (bool(network) or bool(said)) == multi, plan.parallelism
        if said and "nothing stored says how" in said[0]:  # undocumented: timed on Ethernet, not the default
            fabric = knowledge.assumptions.fabric["eth-100"]
            assert fabric.name in said[0] and "state the fabric" in said[0]
    given = recommend(
        knowledge,
        Workload(model="llama-2-70b", kind="finetune"),
        Constraints(budget_usd=800, fabric="eth-100"),
    )
    assert not any("timed as linked by" in c for p in given.plans for c in checks(p))


def test_a_benchmarks_batch_is_flagged(knowledge) -> None:
    report = recommend(
        knowledge, Workload(model="resnet50", samples=200e3, epochs=30), Constraints(deadline_hours=72)
    )
    flagged = [p for p in report.plans if any("the benchmark's throughput runs used" in c for c in checks(p))]
    assert flagged
    for plan in flagged:
        assert f"micro-batch {plan.layout.micro_batch:,} per GPU" in checks(plan)[0]
    given = recommend(
        knowledge,
        Workload(model="resnet50", samples=200e3, epochs=30, batch_size=256),
        Constraints(deadline_hours=72),
    )
    assert not any("throughput runs used" in c for p in given.plans for c in checks(p))


def test_a_service_without_a_spare_replica_says_so_with_the_cost_of_one(knowledge) -> None:
    report = recommend(
        knowledge,
        Workload(model="llama-3.1-8b", kind="inference", requests_per_s=20, tpot_ms=50),
        Constraints(),
    )
    for plan in report.plans:
        s = plan.serving
        assert s is not None
        spare = (s.replicas - 1) * s.capacity_rps / s.replicas >= s.load_rps
        said = [c for c in checks(plan) if "N+1" in c]
        assert bool(said) == (not spare), plan.parallelism
        if said:
            assert (
                f"N+1 ({s.replicas + 1} replicas) costs about ${plan.cost_usd.mid / s.replicas:,.0f}"
                in said[0]
            )
    assert any(p.serving and p.serving.replicas == 1 for p in report.plans)
