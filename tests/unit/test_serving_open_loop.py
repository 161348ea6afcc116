"""The open loop simulated (Poisson arrivals through the engine's scheduler) against the mean-value
analysis the search sizes with: where the shortcut agrees, and that answers report the simulation."""

from __future__ import annotations

import pytest

from advisor.physics.arrivals import OPEN_LOOP_REQUESTS, simulate_open
from advisor.physics.batching import EngineLimits, batch_cap, capacity, kv_tokens, open_stats
from advisor.physics.serving import Efficiency, Hardware, Replica, Shape

LLAMA_8B = Shape(
    params=8.03e9,
    active_params=8.03e9,
    layers=32,
    hidden=4096,
    attn_width=4096,
    kv_heads=8,
    head_dim=128,
)
H100 = Hardware(
    peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
)
EFF = Efficiency(memory=0.8, compute=0.6, kv=0.6, step_s=2e-3, per_seq_s=2e-5)
VLLM = EngineLimits(max_seqs=1024, token_budget=8192)
REP = Replica(LLAMA_8B, H100)
ISL, OSL, OVERHEAD = 512, 256, 4e9


def _both(share: float):
    sat = capacity(REP, EFF, VLLM, ISL, OSL, OVERHEAD)
    assert sat is not None
    rate = share * sat.requests_s
    cap, kv = batch_cap(REP, VLLM, ISL, OSL, OVERHEAD), kv_tokens(REP, VLLM, OVERHEAD)
    des = simulate_open(REP, EFF, VLLM, cap, kv, [(ISL, OSL)] * OPEN_LOOP_REQUESTS, rate)
    mva = open_stats(REP, EFF, VLLM, ISL, OSL, rate, OVERHEAD)
    assert des is not None and mva is not None
    return rate, des, mva


@pytest.mark.parametrize("share", [0.2, 0.5, 0.7])
def test_the_shortcut_agrees_on_the_median_tpot_and_the_mean_ttft(share: float) -> None:
    """The mean-value analysis is kept for sizing: its median TPOT within 10% of the simulation's and its
    mean TTFT within 40% up to 70% of capacity."""
    _, des, mva = _both(share)
    assert mva.tpot[0] == pytest.approx(des.tpot[0], rel=0.10)
    assert mva.means[0] == pytest.approx(des.means[0], rel=0.40)


def test_the_shortcut_misses_the_tails_so_answers_report_the_simulation() -> None:
    """Per-request TPOT averages hundreds of iterations, so its P99 is near its median (the shortcut prices
    one iteration's tail); TTFT's P99 is the queue's tail, which the shortcut under-states."""
    _, des, mva = _both(0.7)
    assert des.tpot[2] < mva.tpot[2]
    assert des.ttft[2] > mva.ttft[2]


def test_the_simulation_is_seeded_and_obeys_littles_law() -> None:
    rate, des, _ = _both(0.5)
    _, again, _ = _both(0.5)
    assert des == again
    in_system = des.running + des.waiting
    assert in_system == pytest.approx(rate * des.means[3], rel=0.15)


def test_ttft_grows_with_the_load() -> None:
    means = [_both(share)[1].means[0] for share in (0.2, 0.5, 0.85)]
    assert means == sorted(means) and means[-1] > 1.3 * means[0]


def test_predict_at_a_rate_reports_the_simulated_percentiles(knowledge) -> None:
    from advisor.answer.predict import predict
    from advisor.job.inputs import Workload

    w = Workload(
        model="llama-3.1-8b", kind="inference", requests_per_s=10, prompt_tokens=512, output_tokens=256
    )
    p = predict(knowledge, w, "h100-sxm", 1)
    load = p.serving_load
    assert load is not None and load.loop == "open" and load.requests_per_s == pytest.approx(10)
    assert load.ttft_ms.p50 <= load.ttft_ms.p90 <= load.ttft_ms.p99
    assert load.running_per_replica == pytest.approx(10 * load.e2e_s.mean, rel=0.2)


def test_a_paged_cache_is_freed_when_a_request_finishes() -> None:
    """vLLM's paged cache grows by a token per decode and gives every block back when the request ends. An
    open loop that freed only the prompt leaked each request's output tokens until the cache looked full and
    admission went one by one: at a tenth of capacity on a cache of about 30 requests the queue grew without
    bound (600 requests: hundreds waiting, TTFT of minutes). Light load keeps the queue empty and a first
    token within a few iterations of an idle replica's."""
    paged = EngineLimits(max_seqs=256, token_budget=2048, reserve="paged")
    kv = 30.0 * (ISL + OSL)
    sat = capacity(REP, EFF, paged, ISL, OSL, OVERHEAD)
    assert sat is not None
    rate = 0.1 * sat.requests_s
    des = simulate_open(REP, EFF, paged, 256, kv, [(ISL, OSL)] * OPEN_LOOP_REQUESTS, rate)
    alone = simulate_open(REP, EFF, paged, 256, kv, [(ISL, OSL)] * OPEN_LOOP_REQUESTS, 1e-3)
    assert des is not None and alone is not None
    assert des.waiting < 0.1
    assert des.ttft[2] < 3.0 * alone.ttft[2]
