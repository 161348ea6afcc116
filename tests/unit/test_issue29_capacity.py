"""Issue 29: capacity and fabric realism: each plan's separate instances are timed on the network their
provider documents (knowledge/capacity.toml), model parallelism across instances without RDMA is refused,
and many instances say what the provider documents about capacity and reservations."""

from __future__ import annotations

import pytest

from advisor.answer.recommend import recommend, run_search
from advisor.catalog.capacity import link_for, load_capacity, provider_capacity
from advisor.job.inputs import Constraints, Workload
from advisor.search.candidates import efficiency_query, mp_across_nodes

ISSUE = Workload(model="llama-3.1-8b", kind="pretrain", tokens=100e9)


def test_every_row_is_sourced(knowledge) -> None:
    data = load_capacity(knowledge)
    for row in (*data.instance, *data.provider):
        assert row.source in data.sources
    assert all(s.ref and s.title for s in data.sources.values())
    providers = {o.provider for o in knowledge.offers}
    assert {row.provider for row in data.instance} <= providers


def test_lambda_on_demand_instances_are_linked_by_tcp(knowledge) -> None:
    link = link_for(knowledge, "lambda", "gpu_1x_gh200")
    assert link is not None and not link.rdma and link.gbps == 200.0 and link.per == "node"
    aws = link_for(knowledge, "aws", "p5.48xlarge")
    assert aws is not None and aws.rdma and aws.fabric() is not None
    assert aws.fabric().gbs_per_gpu(8) * 8 == pytest.approx(400.0)


@pytest.fixture(scope="module")
def issue_search(knowledge):
    return run_search(
        knowledge, ISSUE, Constraints(budget_usd=50000, deadline_hours=336, objective="cheapest")
    )


def test_no_model_parallelism_across_instances_without_rdma(issue_search) -> None:
    on_tcp = [s for s in issue_search.feasible if s.cand.link is not None and not s.cand.link.rdma]
    assert any(s.cand.layout.nodes > 1 for s in on_tcp)
    for s in on_tcp:
        assert not mp_across_nodes(s.cand.layout), s.cand.layout.label()
    # The issue's plan: 24 GH200 single-GPU instances in a PP4 x DP6 pipeline, timed as InfiniBand.
    assert not any(
        s.cand.gpu.id == "gh200" and s.cand.layout.pp > 1 and s.price and s.price.offer.provider == "lambda"
        for s in issue_search.feasible
    )


def test_plans_are_timed_on_the_documented_link(issue_search) -> None:
    ctx = issue_search.ctx
    for s in issue_search.feasible:
        link = s.cand.link
        if link is None or link.gbps is None or s.cand.layout.nodes < 2:
            continue
        assert (
            s.price is not None
            and link_for(ctx.knowledge, s.price.offer.provider, s.price.offer.instance) == link
        )
        per_gpu = link.gbps / s.cand.layout.node_size if link.per == "node" else link.gbps
        assert efficiency_query(s.cand, ctx).fabric_gbps_per_gpu == pytest.approx(per_gpu)


def test_many_lambda_instances_are_marked_as_needing_a_reservation(knowledge) -> None:
    report = recommend(
        knowledge, ISSUE, Constraints(budget_usd=50000, deadline_hours=336, providers=["lambda"])
    )
    many = [p for p in report.plans if p.price and p.price.instances > 8]
    assert many
    for plan in many:
        text = next(r for r in plan.reasons if "instances (" in r and "GPUs) from lambda" in r)
        assert "1-Click Clusters" in text and "Lambda publishes no on-demand instance limit" in text
        if plan.gpu in ("h100-sxm", "b200"):  # the GPUs the reservation holds
            assert ("beyond the largest" in text) == (plan.count > 512)
            assert ("reserve them" in text) == (plan.count <= 512)
        else:
            assert "offers h100-sxm, b200 only" in text


def test_capacity_blocks_hold_at_most_64_instances(knowledge) -> None:
    cap = provider_capacity(knowledge, "aws")
    assert cap is not None and cap.reservation_max_instances == 64 and cap.reservation_max_days == 182
    assert provider_capacity(knowledge, "nowhere") is None
