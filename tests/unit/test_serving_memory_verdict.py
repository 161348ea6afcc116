"""A serving answer never sizes a batch its own memory verdict says does not fit: the verdict judges the
running sequences by the pool the engine's scheduler admitted them into (the replica's own weights and KV
bytes, against the engine's memory: vLLM's and SGLang's fraction of the GPU, TensorRT-LLM's and LMDeploy's
whole GPU of which the cache takes a fraction of what the weights leave). Before, Llama 3.1 8B on one H100
ran vLLM at the 696 sequences its cache holds and called that 77.2 GB of 76.6 usable: the verdict counted
the weights' and the KV's upper error terms, the simulation their bytes; TensorRT-LLM, LMDeploy and TGI
were judged against vLLM's 90% instead of their own memory."""

from __future__ import annotations

import pytest

from advisor.answer.predict import predict
from advisor.answer.recommend import recommend
from advisor.catalog.loader import Knowledge
from advisor.job.inputs import Constraints, RunConfig, Workload

ENGINES = ("vllm", "sglang", "trtllm", "lmdeploy", "tgi")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "model, gpu",
    [
        ("llama-3.1-8b", "h100-sxm"),
        ("llama-2-7b", "h200"),
        ("mistral-7b", "l4"),
        ("qwen2.5-7b", "a100-80gb-sxm"),
        ("llama-3.2-1b", "l4"),
    ],
)
def test_predict_at_no_load_fits_the_batch_it_chose(
    knowledge: Knowledge, model: str, gpu: str, engine: str
) -> None:
    w = Workload(model=model, kind="inference", config=RunConfig(engine=engine))
    got = predict(knowledge, w, gpu, 1)
    assert got.refusal is None and got.throughput is not None
    assert got.memory.fits, (got.memory.verdict, got.memory.per_gpu_gb, got.memory.usable_gb)
    assert got.memory.verdict == "fits"


def test_the_memory_is_what_the_engine_admitted(knowledge: Knowledge) -> None:
    """Llama 3.1 8B on an H100 under vLLM: the weights' bytes (8.03B x 2), the cache nearly full at the
    batch the scheduler chose, all within 90% of what CUDA hands out."""
    got = predict(knowledge, Workload(model="llama-3.1-8b", kind="inference"), "h100-sxm", 1)
    mem = got.memory
    assert mem.breakdown["weights"] == pytest.approx(16.06, abs=0.01)
    assert mem.usable_gb == pytest.approx(0.9 * mem.capacity_gb * (1 - 0.0095), rel=1e-3)
    assert 0.98 * mem.usable_gb < mem.per_gpu_gb <= mem.usable_gb


def test_a_free_fraction_engine_is_judged_on_the_whole_gpu(knowledge: Knowledge) -> None:
    """TensorRT-LLM's cache takes 90% of what the weights leave: its deployment sits within the whole GPU."""
    w = Workload(model="llama-3.1-8b", kind="inference", config=RunConfig(engine="trtllm"))
    mem = predict(knowledge, w, "h100-sxm", 1).memory
    assert mem.usable_gb == pytest.approx(mem.capacity_gb * (1 - 0.0095), rel=1e-3)
    assert mem.fits


def test_a_stated_batch_past_the_cache_counts_the_sequences_that_run(knowledge: Knowledge) -> None:
    """2,000 in flight on one H100: the engine runs what its cache holds and queues the rest."""
    w = Workload(model="llama-3.1-8b", kind="inference", batch_size=2000)
    got = predict(knowledge, w, "h100-sxm", 1)
    assert got.memory.fits and got.serving_load is not None
    assert got.serving_load.waiting_per_replica > 0


def test_headroom_shrinks_the_engines_cache_and_the_verdict_alike(knowledge: Knowledge) -> None:
    w = Workload(model="llama-3.1-8b", kind="inference")
    full = predict(knowledge, w, "h100-sxm", 1)
    kept = predict(knowledge, w, "h100-sxm", 1, Constraints(headroom=0.1))
    assert kept.memory.fits
    assert kept.memory.usable_gb == pytest.approx(0.9 * full.memory.usable_gb, rel=1e-3)
    assert kept.configuration["batch"].value < full.configuration["batch"].value  # type: ignore[union-attr]


def test_recommend_at_a_large_concurrency_fits_what_it_sized(knowledge: Knowledge) -> None:
    w = Workload(model="llama-3.1-8b", kind="inference", concurrency=4000)
    report = recommend(knowledge, w, Constraints(top=3, gpus=("h100-sxm",)))
    assert report.plans
    for plan in report.plans:
        assert plan.memory.fits, (plan.memory.per_gpu_gb, plan.memory.usable_gb)


def test_a_model_over_the_gpu_is_still_refused(knowledge: Knowledge) -> None:
    got = predict(knowledge, Workload(model="llama-3.1-70b", kind="inference"), "h100-sxm", 1)
    assert got.refusal == "memory" and got.throughput is None
    assert not got.memory.fits
