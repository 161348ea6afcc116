"""Stated layouts that ran in public are answered, not refused: a TP group wider than a server priced over the
servers' network with a warning, and DeepSpeed's sequence parallelism (Ulysses) priced as its all-to-alls."""

from __future__ import annotations

import json

import pytest

from advisor.cli.main import main
from advisor.job.inputs import RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.physics.memory import TrainingMemoryModel
from advisor.physics.speed import network_for, stack_traits, training_step
from advisor.physics.step_ops import ATTN, CPR, TP

# The shape of a 30B GPT run with TP 32 over 4 DGX A100-40GB servers (the folder's TP-32 script of
# Megatron-DeepSpeed's long-sequence example: 64 layers, hidden 6144, 64 heads, 4h MLP, GPT-2 vocabulary).
GPT_30B = ["--layers", "64", "--hidden", "6144", "--heads", "64", "--kv-heads", "64", "--ffn", "24576"]
GPT_30B += ["--vocab", "50257", "--workload", "pretrain", "--gpu", "a100-40gb-sxm", "--count", "32"]
GPT_30B += ["--precision", "fp16", "--recompute", "full", "--micro-batch", "1", "--global-batch", "2"]


def _predict(capsys, *flags: str) -> tuple[int, dict]:
    code = main(["predict", *flags, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_stated_tp_across_servers_is_priced_with_a_warning_not_refused(capsys) -> None:
    code, out = _predict(capsys, *GPT_30B, "--seq-len", "8192", "--tp", "32")
    assert code == 0 and out["throughput"] is not None, out.get("refusal")
    assert out["layout"]["tp"] == 32
    texts = json.dumps(out)
    assert "spans more than one a100-40gb-sxm server" in texts
    parts = {p["op"]: p for p in out["step_breakdown"]["parts"]}
    assert "servers" in parts[TP]["basis"]  # the inter-server rows or NCCL's model on the fabric


def test_the_search_still_keeps_tp_inside_a_server(capsys) -> None:
    code, out = _predict(capsys, *GPT_30B, "--seq-len", "8192")
    assert code == 0
    assert out["layout"]["tp"] <= 8


def _70b_step(knowledge, tp: int, nodes: int):
    w = Workload(
        model="llama-2-70b", kind="pretrain", precision="fp16", seq_len=8192, batch_size=1,
        config=RunConfig(global_batch=2, stack="megatron"),
    )  # fmt: skip
    job = resolve_job(knowledge, w, need_data=False)
    gpu = knowledge.gpu("a100-40gb-sxm")
    layout = Layout(
        count=tp, nodes=nodes, node_size=8, precision="fp16", tp=tp, pp=1, dp=1, sharding="none",
        recompute="full", micro_batch=1, grad_accum=2,
    )  # fmt: skip
    per = TrainingMemoryModel(job, gpu, "fp16", knowledge.assumptions).per_sequence("full", tp, 1, 1)
    fabric = knowledge.assumptions.fabric[gpu.fabric]
    step = training_step(job, gpu, layout, fabric, knowledge.assumptions, per, stack_traits("megatron"))
    assert step is not None and step.ops is not None
    return step, layout, fabric, gpu


def test_tp_across_servers_pays_the_network_not_nvlink(knowledge) -> None:
    step16, layout, fabric, gpu = _70b_step(knowledge, 16, 2)
    step8, *_ = _70b_step(knowledge, 8, 1)
    assert step16.ops is not None and step8.ops is not None
    # Half the bytes per rank of TP 8's GEMMs, but the collectives leave the server: slower per layer.
    assert step16.ops.seconds(TP) > step8.ops.seconds(TP)
    # The speed of light's TP ring runs through the servers' network cards (their whole share), never at
    # PCIe's rate nor above NVLink's.
    net = network_for(gpu, layout, fabric, knowledge.assumptions, 16)
    inner = network_for(gpu, layout, fabric, knowledge.assumptions, 8)
    assert net.intra_gbs == pytest.approx(min(inner.intra_gbs, fabric.gbs_per_gpu(8) * 8))
    assert net.lat_intra == fabric.latency_s


EC = ["--model", "llama-2-7b", "--workload", "finetune", "--gpu", "a100-80gb-sxm", "--count", "8"]
EC += ["--precision", "bf16", "--seq-len", "131072", "--zero", "3", "--recompute", "full"]
EC += ["--micro-batch", "1"]
EC += ["--optimizer", "adamw", "--offload", "params", "--stack", "deepspeed"]


def test_deepspeed_sequence_parallelism_is_answered_and_priced_as_ulysses(capsys) -> None:
    code, out = _predict(capsys, *EC, "--cp", "8", "--dp", "1")
    assert code == 0 and out["throughput"] is not None, out.get("refusal")
    assert out["layout"]["cp"] == 8
    parts = {p["op"]: p for p in out["step_breakdown"]["parts"]}
    assert CPR in parts and "Ulysses" in json.dumps(parts[CPR])


def test_ulysses_attention_is_the_whole_sequence_over_fewer_heads(knowledge) -> None:
    w = Workload(
        model="llama-2-7b", kind="finetune", precision="bf16", seq_len=65536, batch_size=1,
        config=RunConfig(stack="deepspeed"),
    )  # fmt: skip
    job = resolve_job(knowledge, w, need_data=False)
    gpu = knowledge.gpu("a100-80gb-sxm")
    layout = Layout(
        count=8, nodes=1, node_size=8, precision="bf16", tp=1, pp=1, dp=1, cp=8, sharding="zero3",
        recompute="full", micro_batch=1, grad_accum=1,
    )  # fmt: skip
    per = TrainingMemoryModel(job, gpu, "bf16", knowledge.assumptions).per_sequence("full", 1, 8, 1)
    fabric = knowledge.assumptions.fabric[gpu.fabric]
    step = training_step(job, gpu, layout, fabric, knowledge.assumptions, per, stack_traits("deepspeed"))
    assert step is not None and step.ops is not None
    # 4 all-to-alls of a 16-bit (8192 x 4096) tensor per layer per pass over NVLink: milliseconds, well below
    # the attention of a 64k sequence.
    assert 0 < step.ops.seconds(CPR) < step.ops.seconds(ATTN)


def _lora_memory(knowledge, kind: str, precision: str, targets: str = "attention") -> TrainingMemoryModel:
    w = Workload(
        model="llama-2-70b", kind=kind, precision=precision, seq_len=8192, batch_size=1,
        config=RunConfig(stack="megatron", lora_targets=targets),  # type: ignore[arg-type]
    )  # fmt: skip
    job = resolve_job(knowledge, w, need_data=False)
    return TrainingMemoryModel(job, knowledge.gpu("b200"), precision, knowledge.assumptions)


def test_frozen_transformer_engine_linears_keep_no_input_for_a_weight_gradient(knowledge) -> None:
    full, lora = _lora_memory(knowledge, "finetune", "bf16"), _lora_memory(knowledge, "lora", "bf16")
    everywhere = _lora_memory(knowledge, "lora", "bf16", "all")
    h, f, s = 8192, 28672, 8192
    kept_full, kept_lora = full.per_layer["none"][0], lora.per_layer["none"][0]
    # Adapters on the attention projections keep those inputs; the frozen FFN's two GEMMs keep theirs no more.
    assert kept_full - kept_lora == pytest.approx((2 * h + 2 * f) * s)
    assert everywhere.per_layer["none"][0] == pytest.approx(kept_full)  # every input kept by an adapter


def test_a_frozen_base_under_te_fp8_is_held_in_one_byte(knowledge) -> None:
    assert _lora_memory(knowledge, "lora", "fp8").base_bytes == 1.0
    assert _lora_memory(knowledge, "lora", "bf16").base_bytes == 2.0
    assert _lora_memory(knowledge, "finetune", "fp8").base_bytes == 2.0  # a trained weight keeps 16 bits


LORA_70B = ["--model", "llama-2-70b", "--workload", "lora", "--count", "8", "--precision", "fp8"]
LORA_70B += ["--seq-len", "8192", "--tp", "1", "--pp", "1", "--recompute", "none", "--micro-batch", "1"]
LORA_70B += ["--global-batch", "8", "--stack", "megatron", "--lora-rank", "16", "--lora-targets", "attention"]


@pytest.mark.parametrize("gpu, cp, dp", [("mi325x", "1", "8"), ("b200", "2", "4")])
def test_the_public_70b_lora_configurations_are_answered(capsys, gpu: str, cp: str, dp: str) -> None:
    # MLPerf's Llama-2-70B LoRA: FP8, adapters on the attention projections, no recomputation, one sequence
    # of 8,192 tokens per GPU (or two GPUs per sequence), every weight on every GPU.
    code, out = _predict(capsys, *LORA_70B, "--gpu", gpu, "--cp", cp, "--dp", dp)
    assert code == 0 and out["throughput"] is not None, out.get("refusal")
    assert out["memory"]["breakdown"]["weights"] == pytest.approx(69.0, rel=0.02)


def test_a_stated_data_parallel_size_is_fed_without_a_stated_global_batch(capsys) -> None:
    # torchtitan's FSDP2 over 512 H100 (one sequence of 8,192 tokens per rank): the default global batch
    # (about 7.8k tokens per GPU: 489 sequences) grows to the stated 512 ranks instead of refusing them.
    flags = ["--model", "llama-3.1-70b", "--workload", "pretrain", "--gpu", "h100-sxm", "--count", "512"]
    flags += ["--precision", "bf16", "--seq-len", "8192", "--dp", "512", "--zero", "3"]
    flags += ["--stack", "torchtitan"]
    code, out = _predict(capsys, *flags)
    assert code == 0 and out["throughput"] is not None, out.get("refusal")
    assert out["configuration"]["global_batch"]["value"] >= 512
