"""LMDeploy TurboMind 0.1.0's closed loops: the first tokens of the requests that arrive together come out
when the last of their prompts is prefilled (the `wave` of the release's tier in
knowledge/serving_engines.toml), so every request of a wave waits for the whole wave's prefill, as the
release's published profile shows (FTL mean 0.7-0.96 of FTL max at 16-64 threads of 2,048-token prompts);
each prompt streamed after its own iteration would wait, on average, for half of it."""

from __future__ import annotations

import statistics

from advisor.learned.serving.engines import engine
from advisor.physics.batching import EngineLimits, closed_run, closed_schedule
from advisor.physics.serving import Efficiency, Hardware, Replica, Shape

LLAMA_7B = Shape(
    params=6.74e9, active_params=6.74e9, layers=32, hidden=4096, attn_width=4096, kv_heads=32, head_dim=128
)
A100 = Hardware(
    peak_flops=312e12, bandwidth=2.0e12, memory_bytes=80e9, link_bytes_s=300e9, link_latency_s=8e-6
)
EFF = Efficiency(memory=0.8, compute=0.6, kv=0.6, step_s=2e-3, per_seq_s=2e-5)
REP = Replica(LLAMA_7B, A100)


def _run(wave: bool, clients: int, prompt: int = 2048, output: int = 128):
    lim = EngineLimits(max_seqs=None, token_budget=4104, wave=wave)
    sched = closed_schedule(lim, 1024, 1e9, [(prompt, output)] * (3 * clients), clients)
    assert sched is not None
    return sched, closed_run(sched, REP, EFF)


def test_a_wave_waits_for_its_last_prompt() -> None:
    """Wave: mean TTFT is close to the max (every request waits for the wave's prompts) and about the
    clients x one prompt's prefill; streamed after their own iteration the mean is about half the max."""
    alone = statistics.fmean(_run(True, 1)[1].ttft)
    _, held = _run(True, 16)
    _, streamed = _run(False, 16)
    assert statistics.fmean(held.ttft) / max(held.ttft) > 0.9
    assert statistics.fmean(streamed.ttft) / max(streamed.ttft) < 0.65
    assert 12 * alone < statistics.fmean(held.ttft) < 20 * alone
    assert statistics.fmean(held.ttft) > 1.6 * statistics.fmean(streamed.ttft)


def test_the_wave_grows_with_the_clients_and_its_decodes_start_after_it() -> None:
    """TTFT grows with the clients (one wave's prefill each); no request decodes before its first token,
    and TPOT stays the decode's (no prompt stalls a held request)."""
    s16, r16 = _run(True, 16)
    _, r32 = _run(True, 32)
    assert 1.8 < statistics.fmean(r32.ttft) / statistics.fmean(r16.ttft) < 2.2
    assert all(f <= d for f, d in zip(s16.first, s16.done, strict=True))
    _, alone = _run(True, 1)
    assert max(r16.tpot) < 3 * statistics.fmean(alone.tpot)


def test_short_prompts_are_one_iteration_either_way() -> None:
    """Prompts that fit one iteration together come out together with or without the wave."""
    _, held = _run(True, 16, prompt=128)
    _, streamed = _run(False, 16, prompt=128)
    assert abs(statistics.fmean(held.ttft) / statistics.fmean(streamed.ttft) - 1) < 0.05


def test_only_lmdeploy_0_1_runs_the_wave() -> None:
    """The tier holds for rows stating release 0.1.x (a 4,104-token step: session_len 4096 + 8), not for an
    answer (the current release) nor 0.2.0; its rows keep the current release's learned efficiencies."""
    lmd = engine("lmdeploy")
    old = lmd.limits("a100-80gb-sxm", 80, "0.1.0 (TurboMind)")
    assert old.wave and old.token_budget == 4104 and old.chunked
    assert not lmd.limits("a100-80gb-sxm", 80).wave
    assert not lmd.limits("a100-80gb-sxm", 80, "0.2.0 (TurboMind)").wave
    assert not lmd.legacy("0.1.0 (TurboMind)")
    assert "477f2db" in lmd.source_for("0.1.0 (TurboMind)") and lmd.source_for(None) == lmd.source
    assert engine("vllm").legacy("0.7.3")
    assert not any(t.get("wave") for e in ("vllm", "sglang", "trtllm", "tgi") for t in engine(e).tiers)
