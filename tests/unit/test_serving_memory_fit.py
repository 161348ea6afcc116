"""Whether one sequence fits a serving replica, as vLLM accounts its memory: its gpu_memory_utilization is a
share of what CUDA hands out (cudaMemGetInfo's total: the catalogue's '80 GB' is 80 GiB), and within it the
weights, the forward it profiles and the communicators' buffers; the CUDA graphs it captures after sizing the
cache, and the CUDA context, live in the share the fraction leaves. Deployments the development sets ran
(Llama-2-70B in fp16 on 2 A100-80GB, AWQ on 2 A10G and on 2 RTX 4090) were refused as 'memory' before."""

from __future__ import annotations

import pytest

from advisor.catalog.loader import load_knowledge
from advisor.job.inputs import Workload
from advisor.job.resolve import resolve_job
from advisor.learned.serving.replica import build, communicator_bytes
from advisor.physics.batching import batch_cap, kv_tokens, profile_peak_bytes
from advisor.physics.memory import GB, capacity_gb, usable_gb


def _llama2_70b(isl: int = 7, osl: int = 256):
    k = load_knowledge()
    job = resolve_job(
        k,
        Workload(model="llama-2-70b", kind="inference", prompt_tokens=isl, output_tokens=osl),
        need_data=False,
    )
    return k, job


def test_the_replica_has_what_cuda_hands_out() -> None:
    """An A100 80GB's vLLM logs 'total_gpu_memory (79.15GiB)': 80 GiB less the driver's share, not 80e9."""
    k, job = _llama2_70b()
    gpu = k.gpu("a100-80gb-pcie")
    setup = build(job, gpu, 2, 1, "fp16", "vllm", k.assumptions)
    assert setup is not None
    assert setup.replica.hw.memory_bytes == pytest.approx(usable_gb(gpu, k.assumptions) * GB)
    assert 79.0 * 1024**3 < setup.replica.hw.memory_bytes < 79.5 * 1024**3
    assert setup.replica.hw.memory_bytes < capacity_gb(gpu, k.assumptions) * GB


def test_vllm_counts_the_profiled_forward_and_the_communicators_not_the_graphs() -> None:
    """Inside the fraction: the profile's peak and one communicator per parallel dimension over 1; not the
    3.5 GB upper bound of CUDA graphs, workspaces and allocator caching."""
    k, job = _llama2_70b()
    gpu = k.gpu("a100-80gb-pcie")
    setup = build(job, gpu, 2, 1, "fp16", "vllm", k.assumptions)
    assert setup is not None and job.arch is not None
    working = profile_peak_bytes(
        setup.replica, setup.limits, job.arch.vocab, k.assumptions.activations["per_layer_coeff"].value
    )
    assert setup.working_bytes == pytest.approx(working)
    assert setup.overhead_bytes == pytest.approx(working + communicator_bytes(2, 1, k.assumptions))
    assert communicator_bytes(1, 1, k.assumptions) == 0.0
    assert setup.overhead_bytes < 1.5 * GB


@pytest.mark.parametrize(
    "gpu_id, precision",
    [("a100-80gb-pcie", "fp16"), ("a10g", "int4"), ("rtx-4090", "int4")],
)
def test_llama2_70b_on_two_gpus_holds_a_sequence_as_it_ran(gpu_id: str, precision: str) -> None:
    """mlc-ai/llm-perf-bench ran vLLM with Llama-2-70B at TP2 on each (a 7-token prompt, 256 tokens out):
    the cache holds the sequence, and the model's 4,096-token context (vLLM refuses to start otherwise)."""
    k, job = _llama2_70b()
    setup = build(job, k.gpu(gpu_id), 2, 1, precision, "vllm", k.assumptions)
    assert setup is not None
    assert batch_cap(setup.replica, setup.limits, 7, 256, setup.overhead_bytes) >= 1
    assert kv_tokens(setup.replica, setup.limits, setup.overhead_bytes) >= 4096


def test_seventy_b_in_fp16_on_one_a100_still_does_not_fit() -> None:
    """The weights alone (138 GB) are over one card: refused, whatever the accounting."""
    k, job = _llama2_70b()
    setup = build(job, k.gpu("a100-80gb-sxm"), 1, 1, "fp16", "vllm", k.assumptions)
    assert setup is not None
    assert batch_cap(setup.replica, setup.limits, 7, 256, setup.overhead_bytes) == 0


@pytest.mark.parametrize(
    "engine, words, fraction",
    [
        ("vllm", "vLLM's --gpu-memory-utilization 0.9 of the GPU", 0.9),
        ("sglang", "SGLang's --mem-fraction-static 0.88 of the GPU", 0.88),
        ("trtllm", "TensorRT-LLM's KV cache takes --kv_cache_free_gpu_memory_fraction 0.9 of what the", 1.0),
        ("tgi", "Text Generation Inference's --cuda-memory-fraction 1 of the GPU", 1.0),
    ],
)
def test_a_refusal_counts_each_engines_own_memory_fraction(engine, words, fraction) -> None:
    """Nothing fits: the refusal's usable memory and its note are the engine's own memory setting
    (knowledge/serving_engines.toml), not vLLM's 0.9 for every engine."""
    from advisor.answer.predict import predict
    from advisor.job.inputs import Constraints, RunConfig

    k = load_knowledge()
    work = Workload(model="llama-3.1-70b", kind="inference", config=RunConfig(engine=engine))
    pred = predict(k, work, "h100-sxm", 1, Constraints())
    assert pred.refusal == "memory"
    assert pred.memory.usable_gb == pytest.approx(
        usable_gb(k.gpu("h100-sxm"), k.assumptions) * fraction, 0.01
    )
    assert words in pred.notes[0], pred.notes[0]
    assert f"({pred.memory.usable_gb:.0f} GB usable: " in pred.notes[0], pred.notes[0]
