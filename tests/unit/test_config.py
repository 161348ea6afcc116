"""Unit tests of stated configurations: held fixed, marked given or chosen, impossible ones refused."""

from __future__ import annotations

import pytest

from advisor.answer.predict import predict
from advisor.job.door import question
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.learned.efficiency import PriorEfficiency
from advisor.question.errors import InputError

GPT3 = dict(model="gpt3-175b", precision="bf16", seq_len=2048)


def _predict(knowledge, count: int, **config):
    mb = config.pop("micro_batch", None)
    w = Workload(**GPT3, batch_size=mb, config=RunConfig(**config))
    return predict(knowledge, w, "h100-sxm", count, Constraints(), PriorEfficiency(knowledge.assumptions))


@pytest.mark.parametrize("count,dp", [(1024, 16), (8192, 128)])
def test_stated_layout_is_held(knowledge, count: int, dp: int) -> None:
    p = _predict(knowledge, count, tp=8, pp=8, recompute="full", global_batch=1536)
    assert p.throughput is not None
    assert (p.layout.tp, p.layout.pp, p.layout.dp, p.layout.recompute) == (8, 8, dp, "full")
    assert p.layout.micro_batch * p.layout.grad_accum * p.layout.dp == 1536
    c = p.configuration
    assert c["tp"].source == c["pp"].source == c["recompute"].source == c["global_batch"].source == "given"
    assert c["dp"].source == "chosen" and c["dp"].value == dp
    assert c["micro_batch"].source == "chosen"


def test_stated_layout_that_does_not_fit_is_not_replaced(knowledge) -> None:
    p = _predict(knowledge, 64, tp=8, pp=1, zero=0, recompute="none", micro_batch=4, global_batch=1536)
    assert p.throughput is None and p.refusal == "memory"
    assert (p.layout.tp, p.layout.pp, p.layout.sharding, p.layout.recompute, p.layout.micro_batch) == (
        8,
        1,
        "ddp",
        "none",
        4,
    )
    assert p.memory.per_gpu_gb > p.memory.usable_gb and "optimizer" in p.memory.breakdown


@pytest.mark.parametrize(
    "config,count,words",
    [
        (dict(tp=5), 64, "does not divide gpt3-175b's 96 attention heads"),
        (dict(pp=128), 1024, "more than gpt3-175b's 96 layers"),
        (dict(ep=2), 64, "dense"),
        (dict(tp=8, pp=4, dp=4, cp=1), 64, "= 128, not the 64 GPUs"),
        (dict(tp=8, pp=8, cp=1, global_batch=99), 128, "global_batch: 99 is not divisible by dp 2"),
        (dict(cp=3), 48, "cp: 3 does not divide the sequence length 2048"),
        (
            dict(pp=8, pp_schedule="interleaved:16"),
            64,
            "96 layers, the embedding and the loss do not fill 128",
        ),
        (
            dict(pp=32, pp_schedule="interleaved:4"),
            64,
            "96 layers, the embedding and the loss do not fill 128",
        ),
        (dict(zero=0, offload="optimizer"), 8, "offload: 'optimizer' needs ZeRO"),
        (dict(engine="vllm"), 8, "engine: 'vllm' is not used by finetune; used only by inference"),
        (dict(tp=8, shard_group=3), 64, "shard_group: 3 does not divide"),
        (dict(tp=16), 24, "^tp: 16 does not divide the 24 GPUs; "),  # one size: not 'makes tp 16 = 16'
        (dict(tp=8, pp=2), 24, "^tp: 8 x pp 2 = 16 does not divide the 24 GPUs; "),
    ],
)
def test_impossible_combinations_are_one_line(knowledge, config, count: int, words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")) as exc:
        _predict(knowledge, count, **config)
    assert exc.value.structured and "--" not in str(exc.value)  # fields, not flags: front ends name inputs


def test_moe_expert_parallel_must_divide_experts(knowledge) -> None:
    w = Workload(model="mixtral-8x7b", kind="pretrain", config=RunConfig(ep=3))
    with pytest.raises(InputError, match="ep: 3 does not divide mixtral-8x7b's 8 experts"):
        predict(knowledge, w, "h100-sxm", 48, Constraints(), PriorEfficiency(knowledge.assumptions))


def test_bad_schedule_is_refused() -> None:
    with pytest.raises(ValueError, match="interleaved:V"):
        RunConfig(pp_schedule="zigzag")


def test_old_optimizer_name_is_read() -> None:
    assert question(Workload, {"model": "llama-2-7b", "optimizer": "adam8bit"}).optimizer == "adamw-8bit"


def test_refusal_names_the_global_batch_not_memory(knowledge) -> None:
    p = predict(
        knowledge,
        Workload(model="waveglow"),
        "h100-sxm",
        8,
        Constraints(),
        PriorEfficiency(knowledge.assumptions),
    )
    assert p.throughput is None and p.refusal == "scale"
    assert "global batch" in p.notes[0] and "does not fit" not in p.notes[0]


def test_small_model_gets_no_tensor_parallelism(knowledge) -> None:
    p = predict(
        knowledge,
        Workload(model="mpt-125m", kind="pretrain", precision="bf16"),
        "h100-sxm",
        8,
        Constraints(),
        PriorEfficiency(knowledge.assumptions),
    )
    assert p.layout.tp == 1 and p.layout.pp == 1


def test_uneven_pipeline_chunks_with_the_embedding_and_the_loss_on_their_own_are_legal(knowledge) -> None:
    # Qwen3-235B's 94 layers on PP32 x V3 = 96 chunks: the first chunk holds the embedding alone and the last
    # the loss alone (Megatron-LM's account-for-embedding/loss split, or a custom pipeline layout), every
    # other chunk one layer; the step's stages hold 2 and 3 layers.
    from advisor.physics.step_ops import chunk_sizes

    sizes = chunk_sizes(94, 96)
    assert sizes[0] == sizes[-1] == 0 and set(sizes[1:-1]) == {1} and sum(sizes) == 94
    w = Workload(
        model="qwen3-235b-a22b", kind="pretrain", config=RunConfig(pp=32, pp_schedule="interleaved:3", ep=8)
    )
    p = predict(knowledge, w, "h100-sxm", 768, Constraints(), PriorEfficiency(knowledge.assumptions))
    assert p.layout.pp == 32 and p.layout.virtual == 3 and p.configuration["pp_schedule"].source == "given"
    # 95 layers (the embedding on a chunk of its own, the loss beside the last layer) fill 96 too; 93 do not.
    assert chunk_sizes(95, 96)[-1] == 0
    from advisor.job.config_check import _check_schedule

    with pytest.raises(InputError, match="93 layers, the embedding and the loss do not fill 96 chunks"):
        _check_schedule(RunConfig(pp=32, pp_schedule="interleaved:3"), 93)


def test_expert_parallelism_folds_over_the_tensor_parallel_ranks(knowledge) -> None:
    # Megatron-Core's MoE parallel folding: expert TP x EP x expert DP = TP x CP x DP (parallel_state.py at
    # 00caa53af309), so EP 32 on TP 2 x DP 16 runs with the experts whole on each rank (expert TP 1).
    from advisor.job.layout import expert_tp

    assert expert_tp(2, 16, 32) == 1 and expert_tp(4, 8, 16) == 1
    assert expert_tp(2, 16, 1) == 2 and expert_tp(2, 16, 64) == 2  # no experts split; a layout refused below
    w = Workload(model="qwen3-235b-a22b", kind="pretrain", config=RunConfig(tp=2, pp=8, dp=16, ep=32))
    folded = predict(knowledge, w, "h100-sxm", 256, Constraints(), PriorEfficiency(knowledge.assumptions))
    assert (folded.layout.tp, folded.layout.ep, folded.layout.dp) == (2, 32, 16)
    assert "EP32 (expert TP 1)" in folded.parallelism and folded.throughput is not None
    w = Workload(model="qwen3-235b-a22b", kind="pretrain", config=RunConfig(tp=2, pp=8, dp=16, ep=16))
    half = predict(knowledge, w, "h100-sxm", 256, Constraints(), PriorEfficiency(knowledge.assumptions))
    # Expert TP 1 either way: a rank holds 1/(32 x 8) of the experts at EP 32, 1/(16 x 8) at EP 16.
    assert half.memory.breakdown["weights"] > folded.memory.breakdown["weights"] * 1.5
    # An EP the tensor x data x context parallel ranks cannot hold is still refused.
    w = Workload(model="qwen3-235b-a22b", kind="pretrain", config=RunConfig(tp=2, pp=8, dp=16, ep=64))
    with pytest.raises(InputError, match="ep: 64 does not divide the 32 tensor x data x context parallel"):
        predict(knowledge, w, "h100-sxm", 256, Constraints(), PriorEfficiency(knowledge.assumptions))


def test_the_experts_run_whole_and_their_all_to_all_stays_in_the_server(knowledge) -> None:
    # Expert TP 1 wherever EP runs (Megatron-Bridge's MoE recipes, Megatron-Core's MoE README, torchtitan):
    # EP 8 beside TP 2 is 8 adjacent ranks, one 8-GPU server, so its all-to-all runs over NVLink; with the
    # experts split over TP 2 the group strode over 16 ranks, two servers, and paid the network.
    from advisor.job.layout import Layout
    from advisor.physics.step_ops import _Shape

    w = Workload(model="qwen3-235b-a22b", kind="pretrain", config=RunConfig(tp=2, pp=8, dp=16, ep=8))
    out = predict(knowledge, w, "h100-sxm", 256, Constraints(), PriorEfficiency(knowledge.assumptions))
    assert "EP8 (expert TP 1)" in out.parallelism
    assert out.step_breakdown is not None
    a2a = next(p for p in out.step_breakdown.parts if p.op == "EP all-to-all")
    assert "servers" not in a2a.basis, a2a.basis
    assert Layout(count=256, nodes=32, node_size=8, precision="bf16", tp=2, dp=128, ep=8).expert_tp == 1
    # The shape's span: the expert TP ranks x EP, never the attention's TP x CP.
    shape = _Shape("bf16", tp=2, cp=2, mb=1, recompute="none", ep=8, node_size=8, etp=1)
    assert shape.expert_tp * shape.ep == 8


def test_folded_experts_run_the_same_flops_at_other_gemm_shapes() -> None:
    from advisor.job.resolve import Arch
    from advisor.physics.step_ops import _gemms

    arch = Arch(
        layers=4, hidden=4096, heads=32, kv_heads=4, ffn_hidden=1536, gated=True, vocab=1000,
        experts=128, experts_per_token=8,
    )  # fmt: skip
    flops = lambda gemms: sum(m * n * k * c for m, n, k, c in gemms[2:4])  # noqa: E731 - the routed experts
    plain, folded = _gemms(arch, 8192, 2, 16, True), _gemms(arch, 8192, 2, 32, True, etp=1)
    assert flops(plain) == flops(folded)
    assert (
        folded[2][0] == plain[2][0] and folded[2][1] == 2 * plain[2][1] and folded[2][3] == plain[2][3] // 2
    )
