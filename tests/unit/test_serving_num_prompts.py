"""A burst of N prompts sent at once (--num-prompts, as `vllm bench serve --request-rate inf` sends them):
the engine's scheduler simulated from t=0 to the last token; its TTFT grows with N and its throughput
approaches the saturated steady state as N grows; the flag's bad values are one line, exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from advisor.answer.predict import predict
from advisor.job.inputs import Workload
from advisor.question.errors import InputError

BASE = dict(model="llama-3.1-8b", kind="inference", prompt_tokens=1000, output_tokens=200)
CLI = ["predict", "--model", "llama-3.1-8b", "--workload", "inference", "--gpu", "h100-sxm", "--count", "1"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *args], capture_output=True, text=True, timeout=120
    )


def test_a_bursts_ttft_grows_with_n_and_its_throughput_approaches_the_steady_state(knowledge) -> None:
    got = {n: predict(knowledge, Workload(**BASE, num_prompts=n), "h100-sxm", 1) for n in (4, 64, 512, 2048)}
    ttft = [got[n].serving_load.ttft_ms.mean for n in sorted(got)]
    assert ttft == sorted(ttft) and ttft[-1] > 20 * ttft[0], ttft
    tput = [got[n].throughput.value for n in sorted(got)]
    steady = predict(knowledge, Workload(**BASE, requests_per_s=1e6), "h100-sxm", 1).throughput.value
    assert tput[0] < tput[1] < tput[2], tput
    # the fill and the tail shrink against the makespan: within 15% of the capacity, never over it by more
    assert 0.85 * steady < tput[-1] <= 1.02 * steady, (tput, steady)
    assert tput[0] < 0.5 * steady


def test_a_burst_splits_over_the_replicas_and_says_what_it_assumed(knowledge) -> None:
    one = predict(knowledge, Workload(**BASE, num_prompts=512), "h100-sxm", 1)
    four = predict(knowledge, Workload(**BASE, num_prompts=512), "h100-sxm", 4)
    assert four.serving_load.ttft_ms.mean < one.serving_load.ttft_ms.mean
    assert four.throughput.value > 2 * one.throughput.value
    assert one.serving_load.loop == "burst" and one.serving_load.in_flight_per_replica == 512
    text = " ".join(one.notes)
    assert "assumed all 512 prompts sent at once" in text


def test_n_prompts_with_an_infinite_rate_is_refused(knowledge) -> None:
    """N prompts alone is the burst at t=0; a stated infinite rate beside it is one load too many."""
    with pytest.raises(InputError, match="num_prompts"):
        predict(knowledge, Workload(**BASE, num_prompts=10, requests_per_s=float("inf")), "h100-sxm", 1)


def test_a_finite_run_at_a_rate_counts_its_drain_as_the_harness_does(knowledge) -> None:
    """`vllm bench serve --request-rate R --num-prompts N` divides every output token by the time from the
    first send to the last token: a short run at a high rate completes fewer tokens per second than the
    steady state (R x output), a long run approaches it, and at a low rate the drain is a small share."""
    steady = predict(knowledge, Workload(**BASE, requests_per_s=16.0), "h100-sxm", 1)
    short = predict(knowledge, Workload(**BASE, requests_per_s=16.0, num_prompts=50), "h100-sxm", 1)
    long = predict(knowledge, Workload(**BASE, requests_per_s=16.0, num_prompts=600), "h100-sxm", 1)
    assert short.throughput.value < long.throughput.value < steady.throughput.value
    assert long.throughput.value > 0.85 * steady.throughput.value
    assert short.serving_load is not None and short.serving_load.loop == "open"
    assert any("a run of 50 prompts sent at 16 req/s" in n for n in short.notes)
    slow = predict(knowledge, Workload(**BASE, requests_per_s=1.0, num_prompts=200), "h100-sxm", 1)
    assert 0.9 * 200 < slow.throughput.value <= 200 * 1.05  # ~ 1 req/s x 200 output tokens


def test_a_finite_run_over_capacity_has_a_finite_queue(knowledge) -> None:
    """Over capacity the steady state has no latency (the queue grows without bound), but a run of N
    requests ends: its first tokens wait behind the queue it builds, longer the more requests it sends."""
    cap = predict(knowledge, Workload(**BASE, requests_per_s=1e6), "h100-sxm", 1).throughput.value / 200
    over = 2.0 * cap

    def ttft_ms(n: int) -> float:
        got = predict(knowledge, Workload(**BASE, requests_per_s=over, num_prompts=n), "h100-sxm", 1)
        assert got.serving_load is not None
        return got.serving_load.ttft_ms.mean

    assert ttft_ms(400) > 2 * ttft_ms(100)


def test_n_prompts_through_c_clients_count_every_request_as_the_harness_does(knowledge) -> None:
    """`vllm bench serve --max-concurrency C --num-prompts N` times every request, the first wave (every
    client sending at once, queued behind its own prompts) included: a run of N = 2C requests has a higher
    mean TTFT than the steady state, a long run approaches it, and N <= C is the burst of N."""
    c = 64

    def mean_ttft(**extra: int) -> float:
        got = predict(knowledge, Workload(**BASE, concurrency=c, **extra), "h100-sxm", 1)
        return got.serving_load.ttft_ms.mean

    steady, short, long = mean_ttft(), mean_ttft(num_prompts=2 * c), mean_ttft(num_prompts=100 * c)
    assert short > 1.3 * steady, (short, steady)
    assert steady <= long < short and long == pytest.approx(steady, rel=0.1), (long, steady)
    burst = predict(knowledge, Workload(**BASE, num_prompts=c), "h100-sxm", 1).serving_load.ttft_ms.mean
    assert mean_ttft(num_prompts=c) == pytest.approx(burst, rel=0.02)


def test_closed_requests_simulates_a_short_run_whole_and_weighs_a_long_one() -> None:
    from advisor.physics.batching import EVERY
    from advisor.search.serving import closed_requests

    assert closed_requests(16, None) == (64, None)  # the steady state
    assert closed_requests(16, 40) == (40, EVERY)
    assert closed_requests(16, 5000) == (64, 5000)


@pytest.mark.parametrize(
    "value,needle",
    [("0", "--num-prompts: '0' must be"), ("2.5", "must be a whole"), ("lots", "is not a number")],
)
def test_bad_num_prompts_is_one_line_exit_2(value: str, needle: str) -> None:
    result = _cli(*CLI, "--num-prompts", value)
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines) == 1 and needle in lines[0], result.stderr


def test_num_prompts_with_a_rate_is_a_finite_run_on_the_cli() -> None:
    result = _cli(*CLI, "--num-prompts", "10", "--requests-per-s", "2")
    assert result.returncode == 0, result.stderr
    assert "a run of 10 prompts" in result.stdout, result.stdout


def test_the_door_and_recommend_refuse_what_a_burst_cannot_be(knowledge) -> None:
    from advisor.answer.recommend import recommend
    from advisor.job.door import question
    from advisor.job.inputs import Constraints

    with pytest.raises(InputError, match="num_prompts"):
        question(Workload, {**BASE, "num_prompts": 0})
    with pytest.raises(InputError, match="num_prompts"):
        recommend(knowledge, Workload(**BASE, num_prompts=100), Constraints(gpus=("h100-sxm",)))
