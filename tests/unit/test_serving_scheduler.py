"""The engine's scheduler in the closed-loop simulation: preemption and recompute when a paged cache runs
out, whole-prompt prefills that stall the decodes, and the KV cache a profiled forward leaves."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.physics.batching import (
    EngineLimits,
    closed_run,
    closed_schedule,
    kv_tokens,
    profile_peak_bytes,
)
from advisor.physics.serving import Efficiency, Hardware, Replica, Shape

LLAMA_8B = Shape(
    params=8.03e9, active_params=8.03e9, layers=32, hidden=4096, attn_width=4096, kv_heads=8, head_dim=128
)
MOE = replace(LLAMA_8B, params=47e9, active_params=13e9, experts=8, experts_per_token=2, expert_params=45e9)
H100 = Hardware(
    peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
)
EFF = Efficiency(memory=0.8, compute=0.6, kv=0.6, step_s=2e-3, per_seq_s=2e-5)
REP = Replica(LLAMA_8B, H100)
LENGTHS = [(2000, 1000)] * 400


def _run(reserve: str, kv: float, chunked: bool = True):
    lim = EngineLimits(max_seqs=1024, token_budget=8192, reserve=reserve, chunked=chunked)
    sched = closed_schedule(lim, 1024, kv, LENGTHS, 128)
    assert sched is not None
    return sched, closed_run(sched, REP, EFF).stats(128)


def test_a_paged_cache_that_runs_out_preempts_and_recomputes() -> None:
    """Admitted on their prompts, the requests outgrow a 200K-token cache: the newest are preempted and
    recomputed. Every request still gets one first token and finishes; the recompute costs throughput
    against a cache that never runs out."""
    sched, tight = _run("paged", 200_000.0)
    assert all(f >= 0 for f in sched.first) and all(d >= sched.first[i] for i, d in enumerate(sched.done))
    _, roomy = _run("paged", 1e9)
    assert tight.output_tok_s < 0.97 * roomy.output_tok_s
    assert tight.waiting > 10 and tight.running < 128


def test_paged_admission_runs_more_at_first_than_a_reservation() -> None:
    """A reservation of prompt + output / 2 admits fewer than a cache that only needs the prompt now."""
    paged, _ = _run("paged", 200_000.0)
    reserved, _ = _run("expected", 200_000.0)
    first_paged = paged.runs[0].waiting - paged.runs[0].queued
    first_reserved = reserved.runs[0].waiting - reserved.runs[0].queued
    assert first_paged > first_reserved


def test_whole_prompt_prefills_stall_the_decodes() -> None:
    """vLLM V0 without chunked prefill runs prompts in iterations of their own while the running decodes
    wait; with chunked prefill the prompt chunks ride along the decodes."""
    chunked, _ = _run("expected", 1e9, chunked=True)
    whole, _ = _run("expected", 1e9, chunked=False)
    assert all(r.batch == 0 for r in whole.runs if r.prefill > 0)
    assert any(r.batch > 0 and r.prefill > 0 for r in chunked.runs)
    # a stalled stretch still counts toward the waiting decodes' TPOT
    assert any(r.batch == 0 and r.inv_output > 0 for r in whole.runs)


def test_a_larger_profiled_budget_leaves_a_smaller_cache() -> None:
    small = EngineLimits(max_seqs=256, token_budget=2048)
    large = EngineLimits(max_seqs=256, token_budget=131072)
    a, b = profile_peak_bytes(REP, small, 128256, 34.0), profile_peak_bytes(REP, large, 128256, 34.0)
    assert b > 30 * a
    assert kv_tokens(REP, large, b) < kv_tokens(REP, small, a)
    moe = Replica(MOE, H100)
    # fused-MoE caches are sized per chunk of tokens: past the chunk they stop growing
    assert profile_peak_bytes(moe, large, 32000, 34.0) > profile_peak_bytes(REP, large, 32000, 34.0)


@pytest.mark.parametrize("seqs", [8, 32])
def test_the_running_cap_holds(seqs: int) -> None:
    lim = EngineLimits(max_seqs=seqs, token_budget=8192)
    sched = closed_schedule(lim, seqs, 1e9, [(512, 256)] * 256, 64)
    assert sched is not None
    assert max(r.batch for r in sched.runs) <= seqs
    st = closed_run(sched, REP, EFF).stats(64)
    # while every client has a request out, the rest wait
    assert st.running <= seqs + 0.5 and st.running + st.waiting == pytest.approx(64, abs=1.0)
