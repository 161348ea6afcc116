"""Stated request lengths (--request-lengths sharegpt): a ShareGPT run's requests spread around the stated
means (advisor/physics/lengths.py), so a burst's batch thins as the short ones finish and its makespan is
the longest request's. Unstated, every request has the stated lengths, as before."""

from __future__ import annotations

import statistics
import subprocess
import sys

from advisor.job.inputs import RunConfig, Workload
from advisor.physics.batching import EngineLimits, closed_run, closed_schedule
from advisor.physics.lengths import SHAREGPT_MAX_PROMPT, SHAREGPT_MAX_TOTAL, request_lengths
from advisor.physics.serving import Efficiency, Hardware, Replica, Shape

SHAPE = Shape(
    params=7.2e9, active_params=7.2e9, layers=32, hidden=4096, attn_width=4096, kv_heads=8, head_dim=128
)
HW = Hardware(
    peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
)
REP, EFF = Replica(SHAPE, HW), Efficiency(memory=0.8, compute=0.6, kv=0.6, step_s=2e-3, per_seq_s=2e-5)
LIM = EngineLimits(max_seqs=256, token_budget=2048, reserve="paged")


def test_fixed_lengths_are_the_stated_ones() -> None:
    assert request_lengths(230, 224, 5) == [(230, 224)] * 5
    assert request_lengths(230, 224, 5, "fixed") == [(230, 224)] * 5


def test_sharegpt_lengths_keep_the_means_and_spread_over_an_order_of_magnitude() -> None:
    drawn = request_lengths(230, 224, 2000, "sharegpt")
    outs = [o for _, o in drawn]
    assert abs(statistics.mean(p for p, _ in drawn) / 230 - 1) < 0.1
    assert abs(statistics.mean(outs) / 224 - 1) < 0.1
    assert max(outs) > 4 * 224 and min(outs) < 224 / 4
    assert all(p <= SHAREGPT_MAX_PROMPT and p + o <= SHAREGPT_MAX_TOTAL for p, o in drawn)
    assert drawn == request_lengths(230, 224, 2000, "sharegpt")  # a fixed seed: answers reproduce


def test_long_stated_means_are_not_cut_to_the_samplers_filter() -> None:
    """The filter holds only where the stated means are inside it; a 4,000-token mean is not cut to 2,048."""
    drawn = request_lengths(4000, 1000, 500, "sharegpt")
    assert abs(statistics.mean(p for p, _ in drawn) / 4000 - 1) < 0.15


def _burst_tok_s(lengths: list[tuple[int, int]]) -> float:
    sched = closed_schedule(LIM, 256, 2e6, lengths, len(lengths))
    assert sched is not None
    run = closed_run(sched, REP, EFF)
    return run.stats(len(lengths)).output_tok_s


def test_a_sharegpt_burst_is_slower_than_equal_requests_of_the_same_means() -> None:
    """320 prompts at once (bench serve --request-rate inf): equal requests finish together in a full
    batch; ShareGPT-like ones leave the longest decoding nearly alone, so throughput over the makespan
    falls by more than a third."""
    fixed = _burst_tok_s(request_lengths(230, 224, 320))
    spread = _burst_tok_s(request_lengths(230, 224, 320, "sharegpt"))
    assert spread < 0.65 * fixed


BASE = dict(model="mistral-7b", kind="inference", prompt_tokens=230, output_tokens=224, num_prompts=320)


def _predict(knowledge, lengths: str | None):  # type: ignore[no-untyped-def]
    from advisor.answer.predict import predict

    w = Workload(**BASE, config=RunConfig(engine="vllm", request_lengths=lengths))  # type: ignore[arg-type]
    return predict(knowledge, w, "h100-sxm", 1)


def test_predict_answers_a_sharegpt_burst_slower_and_unstated_lengths_as_before(knowledge) -> None:
    unstated, fixed, spread = (_predict(knowledge, x) for x in (None, "fixed", "sharegpt"))
    assert fixed.throughput.value == unstated.throughput.value
    assert spread.throughput.value < 0.8 * unstated.throughput.value
    assert any("request lengths: ShareGPT-like" in n for n in spread.notes)
    assert not any("request lengths" in n for n in unstated.notes)


def test_the_cli_takes_the_lengths_and_refuses_an_unknown_one() -> None:
    cli = [sys.executable, "-m", "advisor.cli.main", "predict", "--model", "llama-3.1-8b", "--workload"]
    cli += ["inference", "--gpu", "h100-sxm", "--count", "1", "--num-prompts", "50", "--request-lengths"]
    ok = subprocess.run([*cli, "sharegpt"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([*cli, "lognormal"], capture_output=True, text=True, timeout=120)
    lines = [x for x in bad.stderr.splitlines() if x.strip()]
    assert bad.returncode == 2 and len(lines) == 1 and "request-lengths" in lines[0], bad.stderr
