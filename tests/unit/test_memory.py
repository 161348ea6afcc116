"""Unit tests of the memory model against published figures."""

from __future__ import annotations

import pytest

from advisor.job.door import question
from advisor.job.inputs import RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.physics.memory import GB, TrainingMemoryModel, inference_terms


def _states_gb(knowledge, params: float, dp: int, zero: int, optimizer: str = "adamw") -> float:
    # ZeRO's accounting (2 + 2 + K bytes per parameter) is DeepSpeed's: 16-bit gradients, fp32 states, in the
    # paper's fp16 mixed precision (in bf16 at stage 0 DeepSpeed runs BF16_Optimizer: test_memory_refusals).
    # Through the door, as a user's optimizer name arrives (the old names are read there).
    workload = question(
        Workload,
        dict(
            params=params,
            kind="pretrain",
            tokens=1e9,
            optimizer=optimizer,
            config=RunConfig(stack="deepspeed"),
        ),
    )
    job = resolve_job(knowledge, workload)
    model = TrainingMemoryModel(job, knowledge.gpu("a100-80gb-sxm"), "fp16", knowledge.assumptions)
    sharding = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}[zero] if dp > 1 else "none"
    layout = Layout(count=dp, nodes=1, node_size=8, precision="fp16", dp=dp, sharding=sharding)
    states = model.states(layout)
    return sum(states[k][0] for k in ("weights", "gradients", "master_weights", "optimizer")) / GB


def test_mixed_precision_adamw_is_16_bytes_per_parameter(knowledge) -> None:
    assert _states_gb(knowledge, 1e9, 1, 0) == pytest.approx(16.0)


@pytest.mark.parametrize("zero,expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(knowledge, zero: int, expected_gb: float) -> None:
    # ZeRO (Rajbhandari et al. 2019), figure 1: 7.5B parameters, 64 data-parallel GPUs, K = 12.
    assert _states_gb(knowledge, 7.5e9, 64, zero) == pytest.approx(expected_gb, abs=0.1)


def test_optimizer_choice(knowledge) -> None:
    assert _states_gb(knowledge, 1e9, 1, 0, "adam8bit") == pytest.approx(10.0)  # 2 + 2 + 4 + 2 (old name)
    assert _states_gb(knowledge, 1e9, 1, 0, "adamw-8bit") == pytest.approx(10.0)
    assert _states_gb(knowledge, 1e9, 1, 0, "lion") == pytest.approx(12.0)  # 2 + 2 + 4 + 4
    assert _states_gb(knowledge, 1e9, 1, 0, "paged-adamw-8bit") == pytest.approx(8.0)  # states in host memory
    assert _states_gb(knowledge, 1e9, 1, 0, "sgd") == pytest.approx(12.0)


def test_llama2_70b_kv_cache_at_4k(knowledge) -> None:
    # 2 (K, V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes = 327,680 bytes per token.
    job = resolve_job(
        knowledge, Workload(model="llama-2-70b", kind="inference", prompt_tokens=3072, output_tokens=1024)
    )
    assert job.arch is not None
    assert job.arch.kv_bytes_per_token(2.0) == 327_680
    layout = Layout(count=1, nodes=1, node_size=8, precision="bf16")
    terms = inference_terms(job, knowledge.gpu("h100-sxm"), layout, knowledge.assumptions, 4096)
    assert terms.kv_per_seq_high / 1.01 / GB == pytest.approx(327_680 * 4096 / GB)  # 1.34 GB per sequence


def test_korthikanti_activations(knowledge) -> None:
    # Korthikanti et al. 2022: per layer s*b*h*(34 + 5*a*s/h) bytes without recomputation; 2*s*b*h with full.
    megatron = RunConfig(stack="megatron")  # its vocab-parallel loss: 6 bytes per token x vocabulary
    workload = Workload(model="gpt3-175b", kind="pretrain", tokens=1e9, seq_len=2048, config=megatron)
    job = resolve_job(knowledge, workload)
    v100 = knowledge.gpu("v100-32gb")  # no FlashAttention: the attention term stays
    model = TrainingMemoryModel(job, v100, "fp16", knowledge.assumptions)
    s, h, a, layers, vocab = 2048, 12288, 96, 96, job.arch.vocab  # type: ignore[union-attr]
    per_layer = s * h * (34 + 5 * a * s / h)
    assert model.per_sequence("none", 1) == pytest.approx(layers * per_layer + 6 * s * vocab)
    assert model.per_sequence("none", 8) == pytest.approx((layers * per_layer + 6 * s * vocab) / 8)
    # With recomputation the loss is freed before the last block is recomputed: never held together.
    full = layers * 2 * s * h + max(34 * s * h, 6 * s * vocab)
    assert model.per_sequence("full", 1) == pytest.approx(full)


def test_megatron_llama_block_at_its_real_widths(knowledge) -> None:
    # Korthikanti's 34h is a GPT block (MHA, 4h GeLU FFN); Megatron-Core's Llama block keeps, per token and
    # layer: the norms' inputs 4h, the QKV input 2h, Q 2q, K and V 4kv (grouped-query), the projection's input
    # 2q, the dropout masks 2h, the FC1 input 2h and the fused SwiGLU's input 4f and output 2f.
    megatron = RunConfig(stack="megatron")
    workload = Workload(model="llama-3.1-8b", kind="pretrain", tokens=1e9, seq_len=8192, config=megatron)
    job = resolve_job(knowledge, workload)
    model = TrainingMemoryModel(job, knowledge.gpu("a100-80gb-sxm"), "bf16", knowledge.assumptions)
    h, q, kv, f = 4096, 4096, 1024, 14336
    per_token = 4 * h + 2 * h + 2 * q + 4 * kv + 2 * q + 2 * h + 2 * h + 6 * f
    assert per_token == 36 * h  # 34h + 2h: narrower K/V and the fused SwiGLU against a GPT block's 46h widths
    assert model.per_layer["selective"][0] == pytest.approx(per_token * 8192)


def test_flagperf_pp2_layout_fits(knowledge) -> None:
    # FlagPerf's Llama-3-8B pre-training ran on 8 A800-80GB as PP2 x DP4 (Megatron-Core, selective recompute,
    # micro-batch 1, sequence 8192) using 76 of 80 GiB: a measured run is never refused. 1F1B keeps two
    # micro-batches of 16 layers in flight on the first stage.
    from advisor.answer.predict import predict

    config = RunConfig(stack="megatron", tp=1, pp=2, recompute="selective", global_batch=512)
    workload = Workload(
        model="llama-3.1-8b", kind="pretrain", precision="bf16", seq_len=8192, batch_size=1, config=config
    )
    got = predict(knowledge, workload, "a100-80gb-sxm", 8)
    assert got.refusal is None and got.throughput is not None
    assert got.memory.per_gpu_gb < 76 * 1.074 * 1.1  # within 10% of the published peak (GiB in GB)
    assert got.configuration["global_batch"].value == 512


def _hf_per_token(knowledge, model_id: str, kind: str, master: bool, recompute: str) -> float:
    config = RunConfig(stack="hf", master_weights=master, recompute=recompute)
    job = resolve_job(
        knowledge,
        Workload(
            model=model_id,
            kind=kind,
            tokens=1e8,
            seq_len=4096,
            lora_rank=16 if kind == "lora" else None,
            config=config,
        ),
    )
    model = TrainingMemoryModel(job, knowledge.gpu("h200"), "bf16", knowledge.assumptions)
    return model.per_sequence(recompute, 1) / 4096


def test_hf_activations_match_the_measured_h200_slopes(knowledge) -> None:
    # benchmarks/device/results/h200-hf-training-2026-11-30.jsonl: peak allocated grows 3.626 MB per token for
    # Llama-3.2-1B (fp32 weights, bf16 autocast, no checkpointing: 24.797 GB at 2048 tokens, 76.782 at 16384)
    # and 10.99 MB per token for Llama-3.1-8B PEFT LoRA (39.152 GB at 2048, 106.706 at 8192).
    mixed = (76.782 - 24.797) / (16384 - 2048) * 1e9
    lora = (106.706 - 39.152) / (8192 - 2048) * 1e9
    assert _hf_per_token(knowledge, "llama-3.2-1b", "finetune", True, "none") == pytest.approx(
        mixed, rel=0.03
    )
    assert _hf_per_token(knowledge, "llama-3.1-8b", "lora", False, "none") == pytest.approx(lora, rel=0.03)
    # Gradient checkpointing: 1.691 MB per token measured (43.125 GB at 16384 tokens, 70.84 at 32768).
    ckpt = (70.84 - 43.125) / (32768 - 16384) * 1e9
    assert _hf_per_token(knowledge, "llama-3.2-1b", "finetune", True, "full") == pytest.approx(ckpt, rel=0.1)


def test_central_estimate_carries_the_allocator_reserve(knowledge) -> None:
    job = resolve_job(knowledge, Workload(model="llama-3.1-8b", kind="pretrain", tokens=1e9, seq_len=4096))
    model = TrainingMemoryModel(job, knowledge.gpu("h100-sxm"), "bf16", knowledge.assumptions)
    frag = knowledge.assumptions.memory["allocator_fragmentation"].value
    assert model.per_sequence_bytes("full", 1) / model.per_sequence("full", 1) == pytest.approx(1 + frag)


def test_flash_attention_drops_the_attention_matrix(knowledge) -> None:
    job = resolve_job(knowledge, Workload(model="llama-2-7b", kind="pretrain", tokens=1e9))
    with_flash = TrainingMemoryModel(job, knowledge.gpu("a100-80gb-sxm"), "bf16", knowledge.assumptions)
    without = TrainingMemoryModel(job, knowledge.gpu("v100-32gb"), "fp16", knowledge.assumptions)
    assert with_flash.per_sequence("none", 1) < without.per_sequence("none", 1)
    assert with_flash.per_sequence("none", 1) == pytest.approx(without.per_sequence("selective", 1))


def test_qlora_weights_are_4_bit_with_constants(knowledge) -> None:
    job = resolve_job(knowledge, Workload(model="llama-2-70b", kind="qlora", tokens=1e8))
    model = TrainingMemoryModel(job, knowledge.gpu("a100-80gb-sxm"), "bf16", knowledge.assumptions)
    mem = model.components(Layout(count=1, nodes=1, node_size=8, precision="bf16", micro_batch=1), 72.0)
    weights = dict(mem.components)["weights"]
    # NF4 blocks; the token embedding and output layer (2 x 32000 x 8192) stay 16-bit.
    embed = 2 * 32000 * 8192
    assert weights == pytest.approx(((68.98e9 - embed) * 4.127 / 8 + embed * 2) / GB, rel=0.03)
    assert "optimizer" not in dict(mem.components)
    assert job.trainable_params < 0.01 * job.params  # adapters only


def test_verdict_is_decided_on_the_central_estimate(knowledge) -> None:
    job = resolve_job(knowledge, Workload(model="llama-2-7b", kind="finetune", tokens=1e8))
    gpu = knowledge.gpu("a100-80gb-sxm")
    model = TrainingMemoryModel(job, gpu, "bf16", knowledge.assumptions)
    layout = Layout(count=1, nodes=1, node_size=8, precision="bf16", micro_batch=1)
    mem = model.components(layout, 200.0)
    assert mem.low_gb < mem.central_gb < mem.high_gb
    assert mem.central_gb == pytest.approx(model.nominal_bytes(layout) / GB)
    assert mem.dominant in {"weights", "gradients", "optimizer", "master_weights", "activations"}
    c = mem.central_gb
    assert model.components(layout, c * 1.5).verdict == "fits"
    assert model.components(layout, c * 1.01).verdict == "fits, near the limit"
    assert model.components(layout, c * 0.99).verdict == "may not fit"
    assert model.components(layout, c * 0.5).verdict == "does not fit"
    assert model.components(layout, c * 0.99).fits is False


def test_three_way_verdict() -> None:
    from advisor.learned.memory.validation import Check

    def check(outcome: str, central: float) -> Check:
        return Check("s", "row", "run", outcome, central, 15.0, central, None, band=(-0.1, 0.1))

    assert check("fits", 10.0).verdict3 == "fits" and check("fits", 10.0).agrees3
    uncertain = check("fits", 16.0)
    assert uncertain.verdict3 == "may not fit" and uncertain.agrees3 and not uncertain.agrees
    assert not check("fits", 20.0).agrees3  # 'does not fit' for a published run that fit
    assert not check("oom", 10.0).agrees3 and check("oom", 20.0).agrees3


def test_capacity_is_in_gib_less_ecc_and_the_driver_reserve(knowledge) -> None:
    from advisor.physics.memory import capacity_gb, usable_gb

    a = knowledge.assumptions
    assert capacity_gb(knowledge.gpu("a100-80gb-sxm"), a) == pytest.approx(85.899, abs=0.01)  # 80 GiB
    assert capacity_gb(knowledge.gpu("t4"), a) == pytest.approx(16 * 1.073741824 * 15 / 16)  # ECC on GDDR
    # The H200 this project measured reported 150.11 GB to cudaMemGetInfo (141 GiB less the driver's share).
    assert usable_gb(knowledge.gpu("h200"), a) == pytest.approx(150.11, rel=0.005)
    assert usable_gb(knowledge.gpu("h200"), a, 0.1) == pytest.approx(
        0.9 * usable_gb(knowledge.gpu("h200"), a)
    )


def _states(knowledge, stack: str, precision: str = "bf16", **config) -> dict[str, float]:
    job = resolve_job(
        knowledge,
        Workload(params=1e9, kind="pretrain", tokens=1e9, config=RunConfig(stack=stack, **config)),
    )
    model = TrainingMemoryModel(job, knowledge.gpu("h100-sxm"), precision, knowledge.assumptions)
    layout = Layout(count=1, nodes=1, node_size=8, precision=precision)
    return {k: gpu / 1e9 for k, (gpu, _) in model.states(layout).items()}


def test_megatron_keeps_fp32_main_gradients(knowledge) -> None:
    # Megatron-LM: 18 bytes per parameter with bf16 weights and fp32 gradients, 20 with fp16 (the optimizer
    # holds an fp32 copy of the fp16 gradients).
    assert sum(_states(knowledge, "megatron").values()) == pytest.approx(18.0)
    assert sum(_states(knowledge, "megatron", "fp16").values()) == pytest.approx(20.0)
    assert sum(_states(knowledge, "hf").values()) == pytest.approx(16.0)


def test_zero_offload_moves_gradients_to_the_host(knowledge) -> None:
    states = _states(knowledge, "deepspeed", offload="optimizer", zero=2)
    bucket = knowledge.assumptions.memory["offload_bucket_elements"].value * 2 / 1e9
    assert states["optimizer"] == states["master_weights"] == 0.0
    assert states["gradients"] == pytest.approx(min(2.0, bucket))


def test_stack_defaults_follow_their_code(knowledge) -> None:
    from advisor.physics.memory import default_recompute

    stacks = knowledge.assumptions.stack
    assert {"axolotl", "llama-factory", "torchtune", "trl", "unsloth"} <= set(stacks)
    assert default_recompute(stacks["llama-factory"], "lora") == "full"
    assert default_recompute(stacks["axolotl"], "lora") == "none"
    assert default_recompute(stacks["hf"], "qlora") == "full"  # PEFT's prepare_model_for_kbit_training
    job = resolve_job(
        knowledge, Workload(model="llama-3.1-8b", kind="finetune", config=RunConfig(stack="torchtune"))
    )
    assert job.master_weights is False  # torchtune trains bf16 weights, no fp32 copy
    for name, traits in stacks.items():
        assert traits.loss in knowledge.assumptions.loss, name


def test_chunked_losses_hold_less_than_the_full_vocabulary(knowledge) -> None:
    def loss(stack: str) -> float:
        job = resolve_job(
            knowledge,
            Workload(model="llama-3.1-8b", kind="finetune", seq_len=4096, config=RunConfig(stack=stack)),
        )
        return TrainingMemoryModel(job, knowledge.gpu("h100-sxm"), "bf16", knowledge.assumptions).loss_per_seq

    assert loss("trl") < loss("torchtune") < loss("hf")


def test_moe_layers_keep_the_dispatched_tokens(knowledge) -> None:
    job = resolve_job(knowledge, Workload(model="mixtral-8x7b", kind="pretrain", tokens=1e9, seq_len=4096))
    model = TrainingMemoryModel(job, knowledge.gpu("h100-sxm"), "bf16", knowledge.assumptions)
    arch = job.arch
    assert arch is not None and arch.is_moe
    full, _ = model._full_layer(4096)
    coeff = knowledge.assumptions.activations["moe_dispatch_bytes"].value
    dense = full - coeff * arch.experts_per_token * arch.hidden * 4096
    assert full > dense > 0


def _pure_bf16_8b(knowledge, stack: str) -> TrainingMemoryModel:
    workload = Workload(
        model="llama-3.1-8b",
        kind="finetune",
        tokens=1e9,
        seq_len=4096,
        config=RunConfig(stack=stack, master_weights=False),
    )
    job = resolve_job(knowledge, workload)
    return TrainingMemoryModel(job, knowledge.gpu("h200"), "bf16", knowledge.assumptions)


def test_freed_gradients_are_not_held_at_the_activations_peak(knowledge) -> None:
    # benchmarks/device/results/h200-hf-training-2026-11-30.jsonl: Llama-3.1-8B pure bf16 on one H200,
    # 2 x 4,096 tokens, checkpointed, fused AdamW, zero_grad(set_to_none=True) after each step: peak allocated
    # 65.191 GB, below weights + gradients + AdamW states (64.2 GB) + the activations (the logits alone are
    # ~10 GB): the gradients are allocated again by each backward while it frees the activations.
    model = _pure_bf16_8b(knowledge, "hf")
    one = Layout(count=1, nodes=1, node_size=1, precision="bf16", recompute="full", micro_batch=2)
    grads = model.states(one)["gradients"][0]
    assert grads / GB == pytest.approx(16.06, abs=0.05)
    assert model.freed_gradients(one) == grads
    act = model.per_sequence_bytes("full", 1) * 2
    assert model.nominal_bytes(one) == pytest.approx(model.fixed_bytes(one) - grads + max(act, grads))
    states = sum(v[0] for v in model.states(one).values())
    allocated = max(states - grads + model.per_sequence("full", 1) * 2, states)  # no context, no reserve
    assert allocated / GB == pytest.approx(65.191, rel=0.1)
    assert (states + model.per_sequence("full", 1) * 2) / GB > 65.191 * 1.1  # held together: too high
    shown = model.components(one, 150.0)
    assert shown.central_gb == pytest.approx(model.nominal_bytes(one) / GB, rel=1e-6)
    # Accumulating micro-batches keeps the gradients between them; so do several ranks (DDP's buckets) and a
    # stack whose gradients live in its own buffers (Megatron's main_grad).
    assert model.freed_gradients(one.with_(grad_accum=2)) == 0.0
    two = Layout(count=2, nodes=1, node_size=2, precision="bf16", dp=2, sharding="ddp", micro_batch=2)
    assert model.freed_gradients(two) == 0.0
    assert _pure_bf16_8b(knowledge, "megatron").freed_gradients(one) == 0.0


def test_a_full_fine_tune_of_8b_in_pure_bf16_fits_one_80gb_gpu(knowledge) -> None:
    # An 8B model fully fine-tuned in pure bf16 on one 80 GB card (16 + 16 + 32 GB of weights, gradients and
    # AdamW states) with checkpointing and no accumulation: it fits because the gradients and the logits'
    # activations are not held together; with accumulation the gradients stay and it does not.
    model = _pure_bf16_8b(knowledge, "hf")
    h100 = knowledge.gpu("h100-sxm")
    model = TrainingMemoryModel(model.job, h100, "bf16", knowledge.assumptions)
    one = Layout(count=1, nodes=1, node_size=1, precision="bf16", recompute="full", micro_batch=2)
    assert model.nominal_bytes(one) / GB < 85.0
    assert model.nominal_bytes(one.with_(grad_accum=4)) / GB > model.nominal_bytes(one) / GB + 10.0


def test_torchtitan_op_sac_recomputes_the_routed_experts(knowledge) -> None:
    # torchtitan's op-level SAC saves mm outputs (every other one) but not torch._grouped_mm's, and it
    # force-recomputes the router's gate without counting it (torchtitan-moe-sac): a MoE block keeps its
    # input, the attention output, wq's and wv's outputs and the top-k scores and indices, not its experts'
    # outputs.
    from advisor.physics.memory import usable_gb

    job = resolve_job(
        knowledge,
        Workload(
            model="qwen3-30b-a3b",
            kind="pretrain",
            tokens=1e9,
            seq_len=8192,
            config=RunConfig(stack="torchtitan", recompute="selective"),
        ),
    )
    b200 = knowledge.gpu("b200")
    model = TrainingMemoryModel(job, b200, "bf16", knowledge.assumptions)
    arch = job.arch
    assert arch is not None and arch.is_moe and arch.shared_experts == 0
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    kept = 2.0 * (arch.hidden + 2 * q + kv) + 12.0 * arch.experts_per_token
    assert model.per_layer["selective"][0] == pytest.approx(kept * 8192)
    routed = 2.0 * (arch.expert_ffn * arch.experts_per_token + arch.hidden)  # w1's and w2's outputs
    layout = Layout(
        count=8, nodes=1, node_size=8, precision="bf16", dp=8, sharding="zero3", recompute="selective"
    )
    usable = usable_gb(b200, knowledge.assumptions)
    # 4 x 8,192 tokens on 8 B200 under FSDP: fits; counting the experts' outputs as saved put it past the
    # card.
    four = model.nominal_bytes(layout.with_(micro_batch=4)) / GB
    assert four < usable < four + arch.layers * routed * 4 * 8192 * 1.12 / GB
    # 8 x 8,192 with the eager fp32 loss (12 bytes a logit: 119 GB) does not fit, whatever the block keeps.
    assert model.nominal_bytes(layout.with_(micro_batch=8)) / GB > 1.3 * usable
