"""A stated prefix cache hit (--prefix-cache-hit): the share of each prompt the engine finds in its prefix
cache is not prefilled (vLLM's automatic prefix caching, SGLang's radix cache); the rest is, its attention
over the whole prompt. Unstated (0), every prompt is prefilled in full, as before."""

from __future__ import annotations

import statistics
import subprocess
import sys
from dataclasses import replace

import pytest

from advisor.job.inputs import RunConfig, Workload
from advisor.learned.serving.replica import with_flags
from advisor.physics.batching import EngineLimits, cached_tokens, closed_run, closed_schedule
from advisor.physics.serving import Efficiency, Hardware, Replica, Shape, prefill_alone_s

SHAPE = Shape(
    params=8.03e9, active_params=8.03e9, layers=32, hidden=4096, attn_width=4096, kv_heads=8, head_dim=128
)
HW = Hardware(
    peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
)
REP, EFF = Replica(SHAPE, HW), Efficiency(memory=0.8, compute=0.6, kv=0.6, step_s=2e-3, per_seq_s=2e-5)
LIM = EngineLimits(max_seqs=256, token_budget=2048)


def test_cached_tokens_leave_the_last_token_to_compute() -> None:
    """The engine computes at least a prompt's last token (for its logits), whatever the hit."""
    assert cached_tokens(LIM, 1000) == 0
    assert cached_tokens(replace(LIM, prefix_hit=0.5), 1000) == 500
    assert cached_tokens(replace(LIM, prefix_hit=1.0), 1000) == 999
    assert cached_tokens(replace(LIM, prefix_hit=1.0), 1) == 0


def test_a_cached_prompt_reaches_its_first_token_sooner_on_an_idle_replica() -> None:
    """An 8k prompt alone: a half-cached prompt's first token is nearer the cold one's half than its whole
    (the rest's attention still reads the cached half), and a fully cached one costs about one step."""
    cold = prefill_alone_s(REP, EFF, 8192, 2048)
    half = prefill_alone_s(REP, EFF, 8192, 2048, 4096)
    warm = prefill_alone_s(REP, EFF, 8192, 2048, 8191)
    assert 0.4 * cold < half < 0.75 * cold
    assert warm < 0.15 * cold


def _median_ttft(lim: EngineLimits, n: int) -> float:
    sched = closed_schedule(lim, 256, 1e9, [(1024, 256)] * n, n)
    assert sched is not None
    return statistics.median(closed_run(sched, REP, EFF).ttft)


def test_a_cached_burst_is_not_queued_behind_full_prefills() -> None:
    """200 prompts of 1,024 tokens sent at once through a 2,048-token budget: cold, the median request waits
    for about 50 steps of prefill; with every prompt cached the whole burst is admitted in a step or two."""
    cold = _median_ttft(LIM, 200)
    warm = _median_ttft(replace(LIM, prefix_hit=1.0), 200)
    assert warm < 0.1 * cold
    assert _median_ttft(replace(LIM, prefix_hit=0.0), 200) == cold


def test_the_stated_hit_reaches_the_engine_limits_from_the_run_config() -> None:
    """with_flags carries a RunConfig's prefix_cache_hit onto the engine's limits; a measured row's flags
    (which have none) leave it 0."""

    class Flags:
        prefix_cache_hit = 0.75

    assert with_flags(LIM, Flags()).prefix_hit == 0.75
    assert with_flags(LIM, object()).prefix_hit == 0.0


BASE = dict(model="llama-3.1-8b", kind="inference", prompt_tokens=1024, output_tokens=128, num_prompts=200)
CLI = ["predict", "--model", "llama-3.1-8b", "--workload", "inference", "--gpu", "h100-sxm", "--count", "1"]


def _burst(knowledge, hit: float | None):  # type: ignore[no-untyped-def]
    from advisor.answer.predict import predict

    w = Workload(**BASE, config=RunConfig(engine="vllm", prefix_cache_hit=hit))
    return predict(knowledge, w, "h100-sxm", 1)


def test_predict_answers_a_cached_burst_sooner_and_an_unstated_hit_as_before(knowledge) -> None:
    cold, zero, warm = (_burst(knowledge, h) for h in (None, 0.0, 1.0))
    assert zero.serving_load.ttft_ms.mean == cold.serving_load.ttft_ms.mean
    assert warm.serving_load.ttft_ms.mean < 0.5 * cold.serving_load.ttft_ms.mean
    assert warm.throughput.value >= cold.throughput.value


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "lots"])
def test_a_hit_outside_zero_to_one_is_one_line_and_exit_2(bad: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *CLI, "--prefix-cache-hit", bad],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "prefix-cache-hit" in lines[0], result.stderr


def test_the_cli_states_the_hit() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *CLI, "--num-prompts", "50", "--prefix-cache-hit", "50%"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
