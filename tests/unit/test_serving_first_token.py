"""What makes a request wait for its first token under load: the engine's cap on running sequences, and
whether prefill runs first, in iterations of its own (SGLang by default, vLLM V0), which keeps a closed
loop of equal requests in waves whose TTFT grows with their size; a stated engine release is simulated
with that release's scheduler."""

from __future__ import annotations

import statistics

import pytest

from advisor.answer.predict import predict
from advisor.job.inputs import RunConfig, Workload
from advisor.learned.serving.engines import engine
from advisor.physics.batching import EngineLimits, closed_run, closed_schedule
from advisor.physics.serving import Efficiency, Hardware, Replica, Shape

LLAMA_8B = Shape(
    params=8.03e9, active_params=8.03e9, layers=32, hidden=4096, attn_width=4096, kv_heads=8, head_dim=128
)
H100 = Hardware(
    peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
)
EFF = Efficiency(memory=0.8, compute=0.6, kv=0.6, step_s=2e-3, per_seq_s=2e-5)
REP = Replica(LLAMA_8B, H100)


def _steady_ttft(chunked: bool, clients: int) -> float:
    """Mean TTFT of the requests between a closed loop's first and last wave (2000/128 tokens)."""
    lim = EngineLimits(max_seqs=1024, token_budget=8192, chunked=chunked)
    sched = closed_schedule(lim, 1024, 1e9, [(2000, 128)] * (6 * clients), clients)
    assert sched is not None
    run = closed_run(sched, REP, EFF)
    return statistics.fmean(run.ttft[clients:-clients])


def test_prefill_first_keeps_equal_requests_in_waves() -> None:
    """Prefill first: a wave is prefilled before any of it decodes, so it finishes and returns together and
    each request waits for the wave's prompts (TTFT ~ the wave's size). Chunks riding in the decodes'
    iterations stagger the first tokens, so the clients spread out and TTFT barely grows."""
    whole = _steady_ttft(False, 64) / _steady_ttft(False, 16)
    mixed = _steady_ttft(True, 64) / _steady_ttft(True, 16)
    assert whole > 3.0
    assert mixed < 1.6


def test_sglang_runs_prefill_first_and_vllm_mixes() -> None:
    """SGLang's default scheduler runs a new prefill batch whenever one can be formed (mixed chunks only
    with --enable-mixed-chunk); vLLM's current release rides prompt chunks in the decodes' iterations."""
    assert not engine("sglang").limits("h100-sxm", 80).chunked
    assert engine("vllm").limits("h100-sxm", 80).chunked
    assert "enable_mixed_chunk" in _toml_ref("sglang")


def _toml_ref(eid: str) -> str:
    import tomllib

    from advisor.catalog.common import shipped_root
    from advisor.learned.serving.engines import ENGINES_FILE

    with (shipped_root() / ENGINES_FILE).open("rb") as f:
        return str(tomllib.load(f)[eid].get("schedule_ref", ""))


def _mean_ttft(knowledge, gpu: str, count: int, clients: int, **kw) -> float:
    p = predict(knowledge, Workload(kind="inference", concurrency=clients, **kw), gpu, count)
    assert p.serving_load is not None
    return p.serving_load.ttft_ms.mean


SGLANG_8B = dict(
    model="llama-3.1-8b", prompt_tokens=2000, output_tokens=200, config=RunConfig(engine="sglang")
)


def test_sglang_ttft_grows_with_concurrency(knowledge) -> None:
    """The published closed loops (dstack's DeepSeek-R1 on SGLang: 3.9 s at 4, 36 s at 128) grow TTFT with
    the clients; so does the simulation once prefill runs first (before: within 10% from 4 to 64)."""
    low = _mean_ttft(knowledge, "h100-sxm", 1, 8, **SGLANG_8B)
    high = _mean_ttft(knowledge, "h100-sxm", 1, 64, **SGLANG_8B)
    assert high > 3.0 * low


DEEPSEEK = dict(
    model="deepseek-v3",
    precision="fp8",
    prompt_tokens=3200,
    output_tokens=800,
    config=RunConfig(engine="vllm", tp=8),
)


def test_a_stated_release_is_simulated_with_its_scheduler(knowledge) -> None:
    """--stack-version 0.7.3 of vLLM on MI300X with an MLA model: V0 without chunked prefill (prefill
    first, 256 running sequences at most), as dstack measured it (TTFT 1.3 s at 4 clients, 12 s at 64);
    the current release mixes prompt chunks into the decodes and its TTFT grows far less."""
    old = dict(DEEPSEEK, stack_version="0.7.3")
    ratio_old = _mean_ttft(knowledge, "mi300x", 8, 64, **old) / _mean_ttft(knowledge, "mi300x", 8, 4, **old)
    ratio_now = _mean_ttft(knowledge, "mi300x", 8, 64, **DEEPSEEK) / _mean_ttft(
        knowledge, "mi300x", 8, 4, **DEEPSEEK
    )
    assert ratio_old > 5.0
    assert ratio_now < 0.5 * ratio_old
    p = predict(knowledge, Workload(kind="inference", concurrency=64, **old), "mi300x", 8)
    note = next(n for n in p.notes if "defaults on this GPU" in n)
    assert "vLLM 0.7.3's defaults" in note and "at most 256 running sequences" in note
    assert "prefill first" in note
    # The note cites where release 0.7.3's defaults are read (release_source), not the current release's.
    eng = engine("vllm")
    assert eng.release_source and eng.release_source != eng.source
    assert eng.release_source in note and eng.source not in note
    now = predict(knowledge, Workload(kind="inference", concurrency=64, **DEEPSEEK), "mi300x", 8)
    assert eng.source in next(n for n in now.notes if "defaults on this GPU" in n)


@pytest.mark.parametrize("cap", [8, 16])
def test_clients_above_the_running_cap_queue_for_admission(knowledge, cap: int) -> None:
    """A stated --max-num-seqs below the clients: the rest wait in the queue, and their wait is TTFT."""
    w = dict(
        model="llama-3.1-8b",
        prompt_tokens=1000,
        output_tokens=200,
        config=RunConfig(engine="vllm", max_num_seqs=cap),
    )
    p = predict(knowledge, Workload(kind="inference", concurrency=64, **w), "h100-sxm", 1)
    load = p.serving_load
    assert load is not None
    assert load.running_per_replica <= cap + 0.5
    assert load.waiting_per_replica == pytest.approx(64 - cap, abs=1.5)
    # every client waits for the others ahead of it: TTFT is most of the end-to-end latency
    assert load.ttft_ms.mean > 0.5 * load.e2e_s.mean * 1e3
