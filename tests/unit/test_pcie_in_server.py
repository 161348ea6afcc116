"""A tensor-parallel group of PCIe cards inside one server runs its collectives over PCIe peer-to-peer, not
the servers' network and not at the one L40S server's rows, which fall from 20 GB/s at 2 GPUs to 5 at 4 (it
likely crosses sockets without peer-to-peer): the faster of its own link's rows and the peer-to-peer PCIe
server's at its link's nominal bandwidth, as serving prices its all-reduces."""

from __future__ import annotations

import pytest

from advisor.catalog import operations as ops
from advisor.job.inputs import RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.physics.memory import TrainingMemoryModel
from advisor.physics.op_prices import P2P_PCIE, OpPrices
from advisor.physics.speed import stack_traits, training_step
from advisor.physics.step_ops import TP

MIB64 = float(1 << 26)


def _prices(knowledge, gpu_id: str) -> OpPrices:
    gpu = knowledge.gpu(gpu_id)
    return OpPrices(gpu, gpu.fabric)


def test_a_pcie4_group_of_four_runs_at_the_peer_to_peer_rows_at_pcie4s_nominal_rate(knowledge) -> None:
    p = _prices(knowledge, "l40s")
    assert p.link(False) == "pcie4"
    own = p.collective("all_gather", 4, 1, MIB64)
    got = p.in_server("all_gather", 4, MIB64)
    scale = ops.nominal_gbs("pcie4") / ops.nominal_gbs(P2P_PCIE)
    p2p = ops.collective_busbw_gbs("all_gather", P2P_PCIE, 4, 1, MIB64).value * scale
    assert got.seconds == pytest.approx(0.75 * MIB64 / (p2p * 1e9))
    assert got.seconds < own.seconds / 2  # the L40S server's own 4-GPU rows: ~4.7 GB/s
    assert "peer-to-peer" in got.basis


def test_own_rows_answer_where_they_are_faster_and_on_nvlink(knowledge) -> None:
    p = _prices(knowledge, "l40s")
    # Two GPUs of the L40S server reach ~19 GB/s, above the peer-to-peer rows at half their rate (~16).
    assert p.in_server("all_gather", 2, MIB64) == p.collective("all_gather", 2, 1, MIB64)
    h100 = _prices(knowledge, "h100-sxm")
    assert h100.in_server("all_reduce", 8, MIB64) == h100.collective("all_reduce", 8, 1, MIB64)
    assert h100.best_in_server("all_reduce", 8) == h100.best_busbw("all_reduce", 8, 1)


def test_a_stated_tp4_on_l40s_in_one_server_prices_its_collectives_peer_to_peer(knowledge) -> None:
    w = Workload(
        model="llama-2-70b",
        kind="lora",
        precision="bf16",
        seq_len=8192,
        batch_size=1,
        config=RunConfig(global_batch=8, stack="megatron"),
    )
    job = resolve_job(knowledge, w, need_data=False)
    gpu = knowledge.gpu("l40s")
    layout = Layout(
        count=8,
        nodes=1,
        node_size=8,
        precision="bf16",
        tp=4,
        dp=2,
        sharding="zero1",
        micro_batch=1,
        grad_accum=4,
    )
    per = TrainingMemoryModel(job, gpu, "bf16", knowledge.assumptions).per_sequence("none", 4, 1, 1)
    fabric = knowledge.assumptions.fabric[gpu.fabric]
    step = training_step(job, gpu, layout, fabric, knowledge.assumptions, per, stack_traits("megatron"))
    assert step is not None and step.ops is not None
    tp = next(p for p in step.ops.parts if p.op == TP)
    assert "peer-to-peer" in tp.basis and "eth" not in tp.basis
