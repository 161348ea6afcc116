"""An offline run that sends every request at once (a burst: `vllm bench serve` / `sglang.bench_serving`
at the default rate inf) queues its first tokens behind the burst: simulated as that many clients sending one
request each, so a measured offline row that states its requests and a TTFT is predicted and scored (before,
its TTFT was left out: the capacity has no first-token latency)."""

from __future__ import annotations

import statistics

import pytest

from advisor.learned.serving.data import load_cases
from advisor.learned.serving.model import load_model
from advisor.learned.serving.observe import burst, observe_model
from advisor.physics.batching import EngineLimits, closed_run, closed_schedule
from advisor.physics.serving import Efficiency, Hardware, Replica, Shape


@pytest.fixture(scope="module")
def bursts():
    return [c for c in load_cases()[0] if burst(c)]


def test_offline_rows_with_requests_and_a_ttft_are_bursts(bursts) -> None:
    """The seven SGLang offline runs on 4 x H200 (datacrunch-research/h200-benchmarks: 800-6,000 prompts,
    median TTFT 19-187 s) are bursts; offline rows without a TTFT or without a request count are not."""
    assert len(bursts) >= 7
    assert all(c.kind == "offline" and c.requests and c.ttft for c in bursts)
    assert not any(burst(c) for c in load_cases()[0] if c.kind == "offline" and not c.ttft)


def test_a_burst_predicts_its_median_first_token(bursts) -> None:
    """The shipped model, in sample: each burst's median TTFT within 0.6-1.5x of the measured (19-187 s),
    where a first token on an idle replica is under a second."""
    model = load_model()
    assert model is not None
    ratios = []
    for c in bursts:
        ttft = [o for o in observe_model(model, c) if o.quantity == "ttft"]
        assert ttft and ttft[0].measured > 10.0
        ratios.append(ttft[0].predicted / ttft[0].measured)
    assert all(0.6 < r < 1.5 for r in ratios), ratios
    assert 0.7 < statistics.median(ratios) < 1.2


def test_a_burst_waits_longer_the_more_it_sends() -> None:
    """Past what one replica runs at once, the median first token grows with the burst's size."""
    shape = Shape(
        params=8.03e9, active_params=8.03e9, layers=32, hidden=4096, attn_width=4096, kv_heads=8, head_dim=128
    )
    hw = Hardware(
        peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
    )
    rep, eff = Replica(shape, hw), Efficiency(memory=0.8, compute=0.6, kv=0.6, step_s=2e-3, per_seq_s=2e-5)
    lim = EngineLimits(max_seqs=256, token_budget=8192)

    def median_ttft(n: int) -> float:
        sched = closed_schedule(lim, 256, 1e9, [(512, 256)] * n, n)
        assert sched is not None
        return statistics.median(closed_run(sched, rep, eff).ttft)

    assert median_ttft(2000) > 3.0 * median_ttft(500) > 3.0 * median_ttft(64)
