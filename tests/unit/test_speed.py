"""Direct tests of the speed-of-light model against published formulas and measured runs."""

from __future__ import annotations

import csv

import pytest

from advisor.job.inputs import Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.physics.network import Network, ring_allreduce_s
from advisor.physics.speed import peak_flops, training_flops_per_item, training_step


def test_ring_allreduce_matches_nccl_bus_bandwidth_formula() -> None:
    # nccl-tests doc/PERFORMANCE.md: for all-reduce, busbw = algbw x 2(n-1)/n with algbw = S / t, so a link
    # running at bus bandwidth B moves S bytes in t = S x 2(n-1)/n / B.
    size, n, bus_gbs = 1e9, 8, 100.0
    assert ring_allreduce_s(size, n, bus_gbs, 0.0) == pytest.approx(size * 2 * (n - 1) / n / (bus_gbs * 1e9))
    # And every step adds one latency: 2(n-1) steps of a ring.
    assert ring_allreduce_s(size, n, bus_gbs, 1e-5) - ring_allreduce_s(
        size, n, bus_gbs, 0.0
    ) == pytest.approx(2 * (n - 1) * 1e-5)
    assert ring_allreduce_s(size, 1, bus_gbs, 1e-5) == 0.0


def test_allgather_in_one_server_matches_nccl_formula() -> None:
    # nccl-tests: all-gather busbw = algbw x (n-1)/n, i.e. t = S (n-1)/n / B: half an all-reduce.
    net = Network(
        intra_gbs=200.0,
        inter_gbs=50.0,
        node_size=8,
        pod_gpus=1024,
        oversubscription=1.0,
        lat_intra=0.0,
        lat_inter=0.0,
    )
    size = 4e9
    assert net.allgather_s(size, 8) == pytest.approx(size * 7 / 8 / 200e9)


def test_hierarchical_allreduce_crosses_nodes_on_each_rail() -> None:
    # Two servers of 8: a ring of 8 inside (2*7/8 of S over NVLink), then each rank's 1/8 shard over its own
    # NIC between the 2 servers (2*1/2 of S/8), as NCCL does on rail-optimised multi-NIC servers.
    net = Network(
        intra_gbs=200.0,
        inter_gbs=50.0,
        node_size=8,
        pod_gpus=1024,
        oversubscription=1.0,
        lat_intra=0.0,
        lat_inter=0.0,
    )
    size = 8e9
    expected = size * 2 * 7 / 8 / 200e9 + (size / 8) * 2 * 1 / 2 / 50e9
    assert net.allreduce_s(size, 16) == pytest.approx(expected)


def _layout(**kw: object) -> Layout:
    base = dict(
        count=64,
        nodes=8,
        node_size=8,
        precision="bf16",
        tp=8,
        pp=4,
        dp=2,
        sharding="zero1",
        recompute="none",
        micro_batch=1,
        grad_accum=8,
    )
    return Layout(**{**base, **kw})  # type: ignore[arg-type]  # test values of the right types


@pytest.mark.parametrize("pp,m,v", [(4, 8, 1), (8, 16, 1), (4, 8, 2), (8, 32, 4)])
def test_pipeline_bubble_is_the_schedules_closed_form(knowledge, pp: int, m: int, v: int) -> None:
    # Narayanan et al. 2021, sec. 2.2: the 1F1B bubble is (p-1)/m of the ideal time; interleaving v chunks per
    # stage divides it by v.
    job = resolve_job(knowledge, Workload(model="gpt3-175b", kind="pretrain", seq_len=2048), need_data=False)
    gpu = knowledge.gpu("h100-sxm")
    layout = _layout(pp=pp, grad_accum=m, virtual=v, count=8 * pp * 2, nodes=pp * 2, dp=2)
    step = training_step(
        job, gpu, layout, knowledge.assumptions.fabric[gpu.fabric], knowledge.assumptions, 0.0
    )
    assert step is not None
    assert step.bubble_s / step.roofline_s == pytest.approx((pp - 1) / (m * v))


def test_no_bubble_and_no_model_traffic_without_model_parallelism(knowledge) -> None:
    job = resolve_job(
        knowledge, Workload(model="llama-3.1-8b", kind="pretrain", seq_len=4096), need_data=False
    )
    gpu = knowledge.gpu("h100-sxm")
    layout = _layout(tp=1, pp=1, dp=64, sharding="zero3", grad_accum=1, micro_batch=2)
    step = training_step(
        job, gpu, layout, knowledge.assumptions.fabric[gpu.fabric], knowledge.assumptions, 0.0
    )
    assert step is not None
    assert step.bubble_s == 0.0 and step.tp_comm_s == 0.0 and step.pp_comm_s == 0.0
    assert step.items == 64 * 2 * 4096


def _mosaic_rows(knowledge) -> list[dict[str, str]]:
    with (knowledge.root / "benchmarks.csv").open(newline="", encoding="utf-8") as fh:
        return [
            r
            for r in csv.DictReader(fh)
            if r["reported_mfu"] and r["workload"].startswith("mpt-") and r["gpu"] == "a100-80gb-sxm"
        ]


def test_flops_per_token_reproduce_mosaicmls_reported_mfu(knowledge) -> None:
    # MosaicML's table gives measured tokens/s and the MFU it implies (model FLOPs, recomputation not
    # counted).
    # Our FLOPs per token and the A100's dense bf16 peak must turn the one into the other.
    rows = _mosaic_rows(knowledge)
    assert len(rows) >= 20
    gpu = knowledge.gpu("a100-80gb-sxm")
    peak = peak_flops(gpu, "bf16")
    assert peak == pytest.approx(312e12)
    ratios = []
    for r in rows:
        job = resolve_job(
            knowledge,
            Workload(model=r["workload"], kind="pretrain", seq_len=int(r["seq_len"])),
            need_data=False,
        )
        count = int(r["count"])
        layout = Layout(count=count, nodes=int(r["nodes"]), node_size=8, precision="bf16", dp=count)
        mfu = (
            float(r["throughput"])
            * training_flops_per_item(job, layout, knowledge.assumptions)
            / (count * peak)
        )
        ratios.append(mfu / float(r["reported_mfu"]))
    ratios.sort()
    assert ratios[len(ratios) // 2] == pytest.approx(1.0, abs=0.03)
    assert ratios[0] > 0.9 and ratios[-1] < 1.1
