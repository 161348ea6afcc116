"""The serving iteration composed from measured operations (advisor/physics/serving_ops.py): a measured
row's time per output token at one request, monotone in the load, memory-bound at batch 1 and compute-bound
at a large batch, GPUs without measured GEMMs carried by their roofline, grouped experts, latency-bound
all-reduces, and a closed loop's requests counted as the source counted them."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from advisor.job.inputs import Workload
from advisor.job.resolve import resolve_job
from advisor.learned.serving.data import load_cases
from advisor.learned.serving.model import load_model
from advisor.learned.serving.observe import traits
from advisor.learned.serving.replica import Setup, build
from advisor.physics.batching import EngineLimits, closed_run, closed_schedule, counted
from advisor.physics.serving import Efficiency, iteration_s
from advisor.physics.serving_ops import GRID, at

AS_MEASURED = Efficiency(memory=1.0, compute=1.0, kv=1.0, experts=1.0, comm=1.0, step_s=0.0, per_seq_s=0.0)
"""The measured kernels alone: no learned share, no engine overhead."""


def _setup(
    knowledge, model: str, gpu: str, tp: int, precision: str, isl: int = 1000, osl: int = 200
) -> Setup:
    job = resolve_job(
        knowledge,
        Workload(model=model, kind="inference", prompt_tokens=isl, output_tokens=osl),
        need_data=False,
    )
    got = build(job, knowledge.gpu(gpu), tp, 1, precision, "vllm", knowledge.assumptions)
    assert got is not None and got.replica.ops is not None
    return got


@pytest.fixture(scope="module")
def cases():
    return load_cases()[0]


def _row(cases, **want):
    found = [c for c in cases if all(getattr(c, k) == v for k, v in want.items())]
    assert found, want
    return found[0]


LMDEPLOY_70B = {"engine": "lmdeploy", "model": "llama-2-70b", "concurrency": 1, "isl": 128, "osl": 128}
"""LMDeploy 0.1.0, Llama 2 70B on 4 x A100 (TP4), one request in flight: ITL 29 ms."""
ROCM_70B = {"engine": "vllm", "model": "llama-3.1-70b", "gpu": "mi300x", "batch": 1, "isl": 128}
"""ROCm vLLM 0.7.3, Llama 3.1 70B FP8 on 8 x MI300X, batch 1: 116.01 output tokens/s over 2,048 tokens."""


@pytest.mark.parametrize("want,measured_ms", [(LMDEPLOY_70B, 29.0), (ROCM_70B, 1000 / 116.01)])
def test_the_measured_kernels_alone_give_the_time_per_output_token_at_one_request(cases, want, measured_ms):
    """At batch 1 decoding is the weights read at the measured GEMMs' speed and the small all-reduces at
    their measured latency: the composed step alone, no learned share and no engine overhead, is within 12%
    of each row (an AMD GPU's GEMMs carried from the H100's by the roofline ratio)."""
    c = _row(cases, **want)
    alone = iteration_s(c.setup.replica, AS_MEASURED, 1.0, c.isl + c.osl / 2) * 1000
    assert alone == pytest.approx(measured_ms, rel=0.12)


def test_the_shipped_model_keeps_a_named_batch_one_row_within_ten_percent(cases):
    c = _row(cases, **LMDEPLOY_70B)
    model = load_model()
    assert model is not None
    shipped = iteration_s(c.setup.replica, model.efficiency(traits(c)), 1.0, c.isl + c.osl / 2) * 1000
    assert shipped == pytest.approx(29.0, rel=0.10)


def test_the_iteration_is_monotone_in_batch_context_and_prompt_tokens(knowledge):
    rep = _setup(knowledge, "llama-3.1-70b", "h100-sxm", 4, "bf16").replica
    batches = [1, 2, 3, 5, 8, 16, 33, 64, 100, 256, 512, 1024, 4096]
    by_batch = [iteration_s(rep, AS_MEASURED, b, 2000) for b in batches]
    assert by_batch == sorted(by_batch)
    by_ctx = [iteration_s(rep, AS_MEASURED, 32, ctx) for ctx in (64, 512, 2048, 8192, 32768)]
    assert by_ctx == sorted(by_ctx) and by_ctx[-1] > by_ctx[0]
    by_prompt = [iteration_s(rep, AS_MEASURED, 32, 2000, p, p / 2) for p in (0, 16, 256, 2048, 8192)]
    assert by_prompt == sorted(by_prompt)


def test_decode_is_memory_bound_at_batch_one_and_compute_bound_at_a_large_batch(knowledge):
    ops = _setup(knowledge, "llama-3.1-8b", "h100-sxm", 1, "bf16").replica.ops
    assert ops is not None
    assert ops.memory_share(1) > 0.95
    assert ops.memory_share(8192) < 0.2
    shares = [ops.memory_share(m) for m in (1, 16, 64, 256, 1024, 4096)]
    assert shares == sorted(shares, reverse=True)


def test_a_gpu_without_measured_gemms_reads_its_weights_near_its_own_bandwidth(knowledge):
    """The RTX 4090 has no GEMM rows: its times are the L40S's carried by the ratio of the two rooflines, so
    a decode at batch 1 reads the weights near the 4090's own bandwidth (the tables' own fallback scales by
    the FLOP peak alone: 42% of it)."""
    s = _setup(knowledge, "mistral-7b", "rtx-4090", 1, "bf16", 256, 128)
    rep = s.replica
    weights_s = rep.weights_per_gpu / rep.hw.bandwidth
    tpot = iteration_s(rep, AS_MEASURED, 1.0, 300)
    assert weights_s <= tpot < weights_s / 0.6
    assert rep.ops is not None and "l40s" in rep.ops.basis


def test_every_catalogued_gpu_composes_a_step_and_never_beats_its_roofline(knowledge):
    for gpu in knowledge.gpus:
        if gpu.memory_gb < 24 or not gpu.peak_tflops("bf16"):
            continue
        rep = _setup(knowledge, "llama-3.1-8b", gpu.id, 1, "bf16").replica
        weights_s = rep.weights_per_gpu / rep.hw.bandwidth
        for b in (1, 64, 1024):
            assert iteration_s(rep, AS_MEASURED, b, 1000) >= weights_s, gpu.id


def test_routed_experts_are_one_grouped_gemm_not_one_launch_each(knowledge):
    """DeepSeek-V3 on 8 x H200 at one token: 8 routed experts of 58 layers, each a 256-wide slice. Priced as
    one grouped GEMM per layer the experts take a few milliseconds, near their weights over the bandwidth,
    not 8 x 2 x 58 separate small GEMMs' launch floors."""
    ops = _setup(knowledge, "deepseek-v3", "h200", 8, "fp8").replica.ops
    assert ops is not None
    one_token = at(ops.experts_memory, 1) + at(ops.experts_compute, 1)
    assert 1e-3 < one_token < 5e-3


def test_a_decodes_all_reduces_are_latency_bound(knowledge):
    """TP8 on H100: two all-reduces a layer of a few KiB each take the measured small-message time, hardly
    more at 16 tokens than at 1, and grow with the message only past tens of KiB."""
    ops = _setup(knowledge, "llama-3.1-70b", "h100-sxm", 8, "bf16").replica.ops
    assert ops is not None
    per_call = at(ops.comm, 1) / (2 * 80)
    assert 5e-6 < per_call < 40e-6
    assert at(ops.comm, 16) < 1.3 * at(ops.comm, 1) < at(ops.comm, 4096)


def test_curves_are_read_exactly_at_their_points_and_in_between():
    curve = tuple(float(i) for i in range(len(GRID)))
    assert at(curve, 1.0) == 0.0 and at(curve, GRID[8]) == pytest.approx(8.0)
    assert 8.0 < at(curve, math.sqrt(GRID[8] * GRID[9])) < 9.0
    assert at(curve, 2 * GRID[-1]) == pytest.approx(2 * curve[-1])


def test_a_closed_loop_counts_its_waves_as_the_source_counted_them():
    """The first wave (every client at once) queues behind its own prompts. A benchmark of N requests counts
    it once, so its mean TTFT falls toward the steady state as N grows; the steady state leaves it out."""
    from advisor.physics.serving import Hardware, Replica, Shape

    shape = Shape(
        params=8.03e9, active_params=8.03e9, layers=32, hidden=4096, attn_width=4096, kv_heads=8, head_dim=128
    )
    hw = Hardware(
        peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
    )
    rep = Replica(shape, hw)
    eff = Efficiency(memory=0.8, compute=0.6, kv=0.7, step_s=1e-3, per_seq_s=5e-6)
    lim = EngineLimits(max_seqs=1024, token_budget=8192)
    lengths = [(2000, 100 + (i * 37) % 200) for i in range(256)]
    sched = closed_schedule(lim, 1024, 1e7, lengths, 64)
    assert sched is not None
    weights = counted(sched, None)
    assert weights[:64] == [0.0] * 64 and weights[-64:] == [0.0] * 64 and set(weights[64:-64]) == {1.0}
    means = [closed_run(sched, rep, eff, n).latency(0.5).ttft_s for n in (200, 1000, 10000)]
    steady = closed_run(sched, rep, eff, None).latency(0.5).ttft_s
    assert means == sorted(means, reverse=True) and means[-1] > steady
    assert means[-1] == pytest.approx(steady, rel=0.2)


def test_the_engine_timed_alone_has_no_server_in_its_first_token(cases):
    """TensorRT-LLM's batch-1 first-token rows time the engine, not a server: no request overhead added."""
    from advisor.learned.serving.observe import observe

    c = _row(cases, kind="ttft-bs1", model="llama-2-7b", gpu="h100-sxm", isl=128)
    eff = replace(AS_MEASURED, request_s=1.0)
    got = observe(c, eff)
    assert got and all(o.predicted < 0.5 for o in got)


def test_a_weight_only_4bit_checkpoint_reads_its_lm_head_at_16_bits(knowledge):
    """AWQ/GPTQ quantise the decoder layers' linear layers only (vLLM's AWQConfig gives its method to the
    linear layers, not to the LM head): at batch 1 the head's time is the 16-bit head's, not a quarter of
    it, while the layers' GEMMs stay at 4-bit bytes. An 8-bit checkpoint keeps its head at its own bytes
    (the serving model was fitted so)."""
    int4 = _setup(knowledge, "qwen2.5-7b", "a100-80gb-sxm", 1, "int4").replica.ops
    bf16 = _setup(knowledge, "qwen2.5-7b", "a100-80gb-sxm", 1, "bf16").replica.ops
    fp8 = _setup(knowledge, "qwen2.5-7b", "h100-sxm", 1, "fp8").replica.ops
    assert int4 is not None and bf16 is not None and fp8 is not None
    assert at(int4.head_memory, 1.0) == pytest.approx(at(bf16.head_memory, 1.0), rel=1e-9)
    assert at(int4.gemm_memory, 1.0) < 0.4 * at(bf16.gemm_memory, 1.0)
    fp8_bf16 = _setup(knowledge, "qwen2.5-7b", "h100-sxm", 1, "bf16").replica.ops
    assert fp8_bf16 is not None
    assert at(fp8.head_memory, 1.0) < 0.7 * at(fp8_bf16.head_memory, 1.0)
