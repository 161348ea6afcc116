"""--moe-dispatcher: the expert-parallel exchange priced by the dispatcher that runs it (alltoall: NCCL's
all-to-all, a copy per expert; allgather: every token to every rank; deepep: once per server at DeepEP's
measured bandwidth, deepseek-ai/DeepEP@dd758caf4518:docs/legacy.md), stated in the answer and the launch."""

from __future__ import annotations

import json

import pytest

from advisor.catalog.operations.dispatch import destinations
from advisor.physics.op_prices import OpPrices
from advisor.physics.step_ops import EPA

X = 1e9


def _prices(knowledge, gpu_id: str, fabric: str | None = None) -> OpPrices:
    gpu = knowledge.gpu(gpu_id)
    return OpPrices(gpu, fabric or gpu.fabric)


def test_a_token_reaches_fewer_servers_than_it_has_experts() -> None:
    # DeepSeek-V3's routing, top-8 of 256 experts over 8 servers: 5.29 servers, 4.63 of them remote (moe43).
    assert destinations(256, 8, 8) == pytest.approx(5.29, abs=0.01)
    assert destinations(256, 8, 8) * 7 / 8 == pytest.approx(4.63, abs=0.01)
    assert destinations(8, 2, 8) == pytest.approx(2.0)  # two experts, always two ranks
    assert destinations(64, 8, 1) == 1.0


def test_deepep_runs_at_its_measured_bandwidth(knowledge) -> None:
    p = _prices(knowledge, "h100-sxm")  # NDR 400 a GPU: DeepEP's own 50 GB/s RDMA NIC
    assert p.deepep("dispatch", 64, 8, X).seconds == pytest.approx(X / 51e9)
    assert p.deepep("combine", 64, 8, X).seconds == pytest.approx(X / 50e9)
    assert p.deepep("dispatch", 32, 4, X).seconds == pytest.approx(X / 58e9)
    assert p.deepep("dispatch", 128, 16, X).seconds == pytest.approx(X / 51e9)  # past EP 64: EP 64's row
    # Inside one server the NVLink row, never above what the H800 measured.
    assert p.deepep("dispatch", 8, 1, X).seconds == pytest.approx(X / 153e9)
    # A slower NIC scales the row down by its nominal rate (HDR 200: half of NDR 400).
    hdr = _prices(knowledge, "a100-80gb-sxm", "ib-hdr")
    assert hdr.deepep("dispatch", 64, 8, X).seconds == pytest.approx(2.0 * X / 51e9)


def _ep(capsys: pytest.CaptureFixture[str], dispatcher: str, model: str = "deepseek-v3") -> dict:
    from advisor.cli.main import main

    args = ["predict", "--model", model, "--gpu", "h100-sxm", "--count", "512", "--tp", "1", "--ep", "64"]
    args += ["--pp", "8", "--micro-batch", "1", "--global-batch", "512", "--format", "json"]
    code = main([*args, "--moe-dispatcher", dispatcher])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def _ep_line(answer: dict) -> dict:
    return next(p for p in answer["step_breakdown"]["parts"] if p["op"] == EPA)


def test_the_dispatcher_moves_the_ep_exchange_by_its_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    a2a, deepep, gather = (_ep(capsys, d) for d in ("alltoall", "deepep", "allgather"))
    assert a2a["configuration"]["moe_dispatcher"]["value"] == "alltoall"
    line = _ep_line(deepep)
    assert "DeepEP" in line["source"] and "5.29 servers (of 8)" in line["note"]
    # DeepEP: 5.29 copies of a token at 51 / 50 GB/s against NCCL's 8 copies on the same NICs: cheaper.
    assert line["seconds"] < 0.8 * _ep_line(a2a)["seconds"]
    # allgather: 64 / 8 times the all-to-all's bytes (every token to every one of 64 ranks, not 8 experts).
    assert _ep_line(gather)["seconds"] > _ep_line(a2a)["seconds"]
    assert deepep["throughput"]["value"] > a2a["throughput"]["value"] > gather["throughput"]["value"]
    assert any(x["field"] == "moe_dispatcher" and "DeepEP" in x["text"] for x in deepep["assumed"])


def test_a_dense_model_says_the_dispatcher_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.cli.main import main

    args = ["predict", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--count", "8", "--format", "json"]
    plain = main(args)
    base = json.loads(capsys.readouterr().out)
    assert plain == 0 and main([*args, "--moe-dispatcher", "deepep"]) == 0
    stated = json.loads(capsys.readouterr().out)
    assert stated["throughput"]["value"] == pytest.approx(base["throughput"]["value"])
    assert any("no experts" in x["text"] for x in stated["assumed"] if x["field"] == "moe_dispatcher")
    assert "moe_dispatcher" not in base["configuration"]


def test_a_bad_dispatcher_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.cli.main import main

    code = main(["predict", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--moe-dispatcher", "deep-ep"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "'deepep'" in err


def test_the_launch_states_megatron_cores_dispatcher_flags() -> None:
    from advisor.ops.launch import megatron_args
    from advisor.ops.plan_facts import PlanFacts

    base = dict(gpu="h100-sxm", count=64, nodes=8, precision="bf16", tp=1, pp=1, dp=64, sharding="zero1")
    more = dict(recompute="none", micro_batch=1, grad_accum=8, hours_p50=1.0, ep=64)
    args = megatron_args(PlanFacts(**(base | more | {"moe_dispatcher": "deepep"})))
    assert "--moe-token-dispatcher-type flex" in args and "--moe-flex-dispatcher-backend deepep" in args
    assert "--moe-token-dispatcher-type alltoall" in megatron_args(PlanFacts(**(base | more)))
    dense = megatron_args(PlanFacts(**(base | more | {"ep": 1})))
    assert not any("dispatcher" in a for a in dense)


def test_the_recommended_launch_runs_the_dispatcher_priced(capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.cli.main import main

    args = ["recommend", "--model", "mixtral-8x7b", "--workload", "pretrain", "--tokens", "1e9"]
    args += ["--gpu", "h100-sxm", "--max-gpus", "64", "--ep", "8", "--format", "json"]
    assert main([*args, "--moe-dispatcher", "deepep"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["plans"][0]["configuration"]["moe_dispatcher"]["value"] == "deepep"
    text = json.dumps(answer["launch"])
    assert "--moe-token-dispatcher-type flex" in text and "--moe-flex-dispatcher-backend deepep" in text
