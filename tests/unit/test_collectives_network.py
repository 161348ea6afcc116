"""Collectives between servers (advisor/catalog/operations/links.py, alphabeta.py): the measured IB/RoCE rows
where they match, NCCL's own cost model on their bandwidth elsewhere."""

from __future__ import annotations

import itertools
import math

import pytest

from advisor.catalog import operations as ops
from advisor.catalog.operations import alphabeta


def _seconds(op: str, link: str, gpus: int, nodes: int, nbytes: float) -> float:
    got = ops.collective_busbw_gbs(op, link, gpus, nodes, nbytes)
    return alphabeta.bus_factor(op, gpus) * nbytes / (got.value * 1e9)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"])
@pytest.mark.parametrize("gpus,nodes", [(2, 2), (64, 8), (256, 32), (1024, 128)])
def test_time_grows_with_the_message_and_bus_bandwidth_never_falls(op: str, gpus: int, nodes: int) -> None:
    if op == "send_recv":
        gpus = 2
    sizes = [2.0**e for e in range(8, 36, 2)]
    times = [_seconds(op, "ib-ndr400", gpus, nodes, s) for s in sizes]
    rates = [ops.collective_busbw_gbs(op, "ib-ndr400", gpus, nodes, s).value for s in sizes]
    assert all(b > a for a, b in itertools.pairwise(times)), times
    assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(rates)), rates


def test_small_messages_are_latency_bound() -> None:
    # 1 KiB and 4 KiB over 128 servers: the same time to a few percent (the steps' latency, not the bytes).
    small = _seconds("all_gather", "ib-ndr400", 1024, 128, 1024)
    four = _seconds("all_gather", "ib-ndr400", 1024, 128, 4096)
    assert four / small < 1.05
    # NCCL's ring latency over 1,023 steps (127 of them between servers) is milliseconds, not microseconds.
    assert small > 1e-3
    # The same bytes on one server's 8 GPUs (measured NVLink rows) are two orders of magnitude faster.
    assert _seconds("all_gather", "nvlink4", 8, 1, 1024) < small / 50


def test_ring_collectives_slow_with_the_server_count_at_fixed_ranks_per_server() -> None:
    size = 64.0 * 2**20
    times = [_seconds("all_gather", "ib-ndr400", 8 * k, k, size) for k in (16, 32, 64, 128, 256)]
    assert all(b > a for a, b in itertools.pairwise(times)), times
    # The tree keeps an all-reduce's latency logarithmic in the servers: it grows far slower than the ring's.
    ring = alphabeta.latency_us("all_gather", "ring", 2, 2048, 256) / alphabeta.latency_us(
        "all_gather", "ring", 2, 128, 16
    )
    tree = alphabeta.latency_us("all_reduce", "tree", 2, 2048, 256) / alphabeta.latency_us(
        "all_reduce", "tree", 2, 128, 16
    )
    assert ring > 10 and tree < 2


def test_a_group_with_fewer_ranks_a_server_gets_its_share_of_the_network() -> None:
    # The data-parallel groups of TP2 have 4 ranks a server: half the NICs of the 8-rank groups of TP1.
    eight = ops.collective_busbw_gbs("all_reduce", "ib-ndr400", 128, 16, 2.0**33)
    four = ops.collective_busbw_gbs("all_reduce", "ib-ndr400", 64, 16, 2.0**33)
    assert four.value == pytest.approx(eight.value / 2, rel=0.05)
    # One pair across servers (a pipeline send) moves at one GPU's share, near the NIC's 50 GB/s.
    pair = ops.collective_busbw_gbs("send_recv", "ib-ndr400", 2, 2, 2.0**30)
    assert 30 < pair.value <= 50


def test_the_measured_rows_answer_where_they_match_and_say_so() -> None:
    got = ops.collective_busbw_gbs("all_reduce", "ib-ndr400", 32, 4, 2.0**32)
    assert got.basis == "measured" and "nccl-tests issue #309" in got.source
    assert 340 < got.value < 380  # two clusters' 4-server sweeps, 363.5 and 325.0 GB/s at 4 GiB
    model = ops.collective_busbw_gbs("all_gather", "ib-ndr400", 32, 4, 2.0**32)
    assert model.basis.startswith("alpha-beta") and "tuning.cc" in model.source
    far = ops.collective_busbw_gbs("all_reduce", "ib-ndr400", 1024, 128, 2.0**32)
    assert far.basis.startswith("alpha-beta") and far.spread > model.spread  # 4 doublings past 8 servers


def test_links_without_rows_borrow_a_measured_network_link_scaled_by_nominal_bandwidth() -> None:
    per_node = ops.collective_busbw_gbs("all_reduce", "rdma-4x100", 128, 16, 2.0**33)
    ndr = ops.collective_busbw_gbs("all_reduce", "ib-ndr400", 128, 16, 2.0**33)
    assert "scaled from ib-ndr400" in per_node.basis
    assert per_node.value == pytest.approx(ndr.value * 6.25 / 50, rel=0.05)
    assert ops.nominal_gbs("rdma-4x100") == pytest.approx(6.25)


def test_nccl_latency_is_its_tuner_formula() -> None:
    # Ring all-gather, Simple protocol, 16 ranks on 2 servers: 8.4 + 14 NVLink steps x 3.4 + 1 net step x 14.
    assert alphabeta.latency_us("all_gather", "ring", 2, 16, 2) == pytest.approx(8.4 + 14 * 3.4 + 14.0)
    # Tree all-reduce, LL128, 64 ranks on 8 servers: 14 + 2 (7 x 1.25 + 3 x 8.5).
    tree = alphabeta.latency_us("all_reduce", "tree", 1, 64, 8)
    assert tree == pytest.approx(14 + 2 * (7 * 1.25 + 3 * 8.5))
    t, choice = alphabeta.seconds("all_reduce", 64, 8, 2.0**34, 320.0)
    assert choice == "ring/Simple" and t == pytest.approx(2 * 63 / 64 * 2.0**34 / 320e9, rel=0.01)
    assert math.isclose(alphabeta.effective_busbw_gbs("all_reduce", 64, 8, 2.0**34, 320.0), 320, rel_tol=0.01)


def test_a_runs_stated_network_is_read_from_its_own_text() -> None:
    from advisor.learned.efficiency.runs import fabric_of_text

    assert fabric_of_text("A100 40GB with 1600 Gbps node-node interconnect (RoCE), row 68") == "roce-200"
    assert fabric_of_text("H100 (96 GB HBM2e, 400 Gb/s RDMA per GPU)") == "ib-ndr"
    assert fabric_of_text("nvidia_a100-sxm4-80gb, 4 x 100Gb RoCE between machines") == ""  # no per-GPU rate
    assert fabric_of_text("H100 80GB BF16, row 14") == ""


def test_zero1_waits_for_its_parameter_gather_unless_the_stack_overlaps_it() -> None:
    from advisor.physics.data_parallel import OVERLAP_SLOWDOWN, DpSync, exposed

    sync = DpSync(grads=0.5, grads_last=0.01, params=0.4, params_last=0.01, gathers=0.0, source="", basis="")
    compute = 3.0  # 4 micro-batches: the last backward pass is 0.5 s, the first forward 0.25 s
    slow = OVERLAP_SLOWDOWN / (1.0 + OVERLAP_SLOWDOWN)  # what a hidden collective's seconds cost the compute
    ddp = 0.01 + 0.49 * slow  # the last bucket, and the backward pass slowed under the others
    assert exposed(sync, 0, 4, compute, False) == pytest.approx(ddp)
    assert exposed(sync, 1, 4, compute, False) == pytest.approx(ddp + 0.4)  # the gather waits
    assert exposed(sync, 1, 4, compute, True) == pytest.approx(
        ddp + 0.15
    )  # 0.01 + 0.39 past the 0.25 s forward
    assert exposed(sync, 2, 4, compute, False) == pytest.approx(4 * ddp + 0.4)  # per micro-batch


def test_zero3_gathers_wait_a_layer_at_a_time_not_under_the_whole_step() -> None:
    from advisor.physics.data_parallel import OVERLAP_SLOWDOWN, DpSync, exposed

    # 10 layers, a pass's gathers 1.0 s (0.1 s a layer), no gradient traffic; compute 1.5 s: each layer's
    # forward 0.05 s and backward 0.1 s. The step's compute (1.5 s) could hide all 2 s of gathers but 0.5 s;
    # a layer's gather hides only under one layer's forward, so 0.05 s waits in each of 9 layers, the first
    # gather waits whole, and the backward's gathers (0.1 s under 0.1 s) slow its compute.
    sync = DpSync(
        grads=0.0, grads_last=0.0, params=0.0, params_last=0.0, gathers=1.0, source="", basis="", layers=10
    )
    slow = OVERLAP_SLOWDOWN / (1.0 + OVERLAP_SLOWDOWN)
    want = 0.1 + 9 * 0.05 + 9 * 0.1 * slow
    assert exposed(sync, 3, 1, 1.5, False) == pytest.approx(want)
    assert want > 2.0 * 1.0 - 1.5  # more than the step-pooled difference the model used before
    # Two micro-batches gather twice: each waits the same, over half the compute each.
    assert exposed(sync, 3, 2, 3.0, False) == pytest.approx(2 * want)
    # In the backward pass the next layer's gather and this layer's reduce-scatter share one process group.
    both = DpSync(
        grads=1.0, grads_last=0.1, params=0.0, params_last=0.0, gathers=1.0, source="", basis="", layers=10
    )
    assert exposed(both, 3, 1, 3.0, False) == pytest.approx(
        0.1 + 9 * 0.1 * slow + 9 * max(0.2 - 0.2, 0.2 * slow) + 0.1
    )


class _Calls:
    """Records the collectives a data-parallel sync asks for: (op, ranks, servers, bytes a call)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int, float]] = []

    def collective(self, op: str, gpus: int, nodes: int, nbytes: float) -> object:
        from advisor.physics.op_prices import Price

        self.calls.append((op, gpus, nodes, nbytes))
        return Price(0.001, "", "measured")


def test_hybrid_sharding_gathers_within_the_shard_group_and_all_reduces_across_servers() -> None:
    from advisor.job.layout import Layout
    from advisor.physics.data_parallel import dp_sync

    def calls(shard: int) -> dict[str, tuple[int, int, float]]:
        layout = Layout(
            count=128, nodes=16, node_size=8, precision="bf16", dp=128, sharding="zero3", shard_group=shard
        )
        prices = _Calls()
        dp_sync(layout, prices, (28e9, 28e9, 14), "fsdp", False)  # type: ignore[arg-type]
        return {op: (gpus, nodes, nbytes) for op, gpus, nodes, nbytes in prices.calls}

    full = calls(0)  # FULL_SHARD: every collective over all 128 ranks on 16 servers, a layer (2 GB) a call
    assert full["all_gather"] == (128, 16, pytest.approx(2e9)) and full["reduce_scatter"][:2] == (128, 16)
    assert "all_reduce" not in full
    hybrid = calls(4)  # HYBRID_SHARD within 4: gathers and reduce-scatter on one server's NVLink
    assert hybrid["all_gather"][:2] == (4, 1) and hybrid["reduce_scatter"][:2] == (4, 1)
    # ... then each shard (a quarter of a layer's gradients) all-reduced over the 32 replicas, 2 a server
    assert hybrid["all_reduce"] == (32, 16, pytest.approx(2e9 / 4))
