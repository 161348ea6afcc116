"""Load as users state it: a concurrency (closed loop), a request rate (open loop) or a static batch per
replica (--batch-size), each answered with the running and waiting requests and latency percentiles."""

from __future__ import annotations

import subprocess
import sys

import pytest

from advisor.answer.predict import predict
from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.question.errors import InputError

BASE = dict(model="llama-3.1-8b", kind="inference", prompt_tokens=1000, output_tokens=200)
DONE_WHEN = [
    "predict",
    "--model",
    "llama-3.1-8b",
    "--workload",
    "inference",
    "--gpu",
    "h100-sxm",
    "--count",
    "1",
    "--concurrency",
    "64",
    "--prompt-tokens",
    "1000",
    "--output-tokens",
    "200",
    "--engine",
    "vllm",
]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *args], capture_output=True, text=True, timeout=120
    )


def test_the_done_when_command_prints_percentiles_running_and_waiting() -> None:
    done = _cli(*DONE_WHEN)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "throughput" in out
    assert "closed loop, 64 requests in flight per replica" in out
    assert "running and" in out and "waiting per replica" in out
    for name in ("TTFT", "TPOT", "ITL", "end-to-end"):
        line = next(x for x in out.splitlines() if x.strip().startswith(name))
        assert "P50" in line and "P90" in line and "P99" in line


def test_concurrency_is_a_closed_loop_whose_percentiles_are_ordered(knowledge) -> None:
    p = predict(knowledge, Workload(**BASE, concurrency=64), "h100-sxm", 1)
    load = p.serving_load
    assert load is not None and load.loop == "closed" and load.in_flight_per_replica == 64
    assert load.running_per_replica + load.waiting_per_replica == pytest.approx(64, rel=0.05)
    for pct in (load.ttft_ms, load.tpot_ms, load.itl_ms, load.e2e_s):
        assert pct.p50 <= pct.p90 <= pct.p99
    # Little's law on the closed loop: in flight = completion rate x time in the system
    assert load.requests_per_s * load.e2e_s.mean == pytest.approx(64, rel=0.1)


def test_more_in_flight_than_the_engine_runs_queues(knowledge) -> None:
    """Past the running-sequence cap the rest wait: TTFT grows, TPOT stays at the full batch's."""
    from advisor.job.inputs import RunConfig

    few = RunConfig(engine="vllm", max_num_seqs=16)
    at16 = predict(knowledge, Workload(**BASE, concurrency=16, config=few), "h100-sxm", 1).serving_load
    at64 = predict(knowledge, Workload(**BASE, concurrency=64, config=few), "h100-sxm", 1).serving_load
    assert at16 is not None and at64 is not None
    assert at64.running_per_replica <= 16.5 and at64.waiting_per_replica > 40
    assert at64.ttft_ms.mean > 3 * at16.ttft_ms.mean
    assert at64.tpot_ms.p50 == pytest.approx(at16.tpot_ms.p50, rel=0.1)
    assert at64.output_tok_s == pytest.approx(at16.output_tok_s, rel=0.1)


def test_concurrency_splits_over_the_replicas(knowledge) -> None:
    p = predict(knowledge, Workload(**BASE, concurrency=64, config=RunConfig(tp=1)), "h100-sxm", 8)
    assert p.serving_load is not None and p.serving_load.in_flight_per_replica == 8


def test_a_request_rate_is_an_open_loop(knowledge) -> None:
    p = predict(knowledge, Workload(**BASE, requests_per_s=5), "h100-sxm", 1)
    assert p.serving_load is not None and p.serving_load.loop == "open"
    assert p.serving_load.requests_per_s == pytest.approx(5)


def test_concurrency_and_a_rate_together_are_refused(knowledge) -> None:
    with pytest.raises(InputError, match="concurrency"):
        predict(knowledge, Workload(**BASE, concurrency=8, requests_per_s=2), "h100-sxm", 1)


def test_recommend_sizes_replicas_for_a_concurrency(knowledge) -> None:
    w = Workload(**BASE, concurrency=256, tpot_ms=30)
    report = recommend(knowledge, w, Constraints(top=3, gpus=("h100-sxm",)))
    assert report.plans
    for plan in report.plans:
        s = plan.serving
        assert s is not None and s.load is not None and s.load.loop == "closed"
        assert s.load.tpot_ms.p50 <= 30.0 + 1e-9
        assert s.replicas * s.batch_per_replica >= 256


def test_batch_size_is_the_static_batch_for_inference() -> None:
    """The README's `predict ... --workload inference ... --batch-size 64` runs: 64 in flight per replica."""
    done = _cli(
        "predict",
        "--model",
        "llama-2-70b",
        "--workload",
        "inference",
        "--gpu",
        "h200",
        "--count",
        "8",
        "--precision",
        "fp8",
        "--prompt-tokens",
        "700",
        "--output-tokens",
        "294",
        "--batch-size",
        "64",
    )
    assert done.returncode == 0, done.stderr
    assert "64 requests in flight per replica" in done.stdout


def test_micro_batch_for_inference_is_refused_by_the_flag_typed() -> None:
    done = _cli(*DONE_WHEN[:-6], "--micro-batch", "64")
    assert done.returncode == 2
    assert "--micro-batch" in done.stderr and "Traceback" not in done.stderr


def test_concurrency_for_training_is_refused() -> None:
    done = _cli("predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--count", "1", "--concurrency", "8")
    assert done.returncode == 2 and "--concurrency" in done.stderr


def test_fewer_clients_than_replicas_leave_replicas_idle(knowledge) -> None:
    """One client on two GPUs is one request in flight, not one per replica: the deployment completes what
    its clients send (Little's law), so two one-GPU replicas are not twice one replica's throughput, and
    predict's fastest shape for one client is the one that serves it fastest (TP2 for a 70B in fp8)."""
    work = dict(BASE, model="llama-3.1-70b", prompt_tokens=5000, output_tokens=500, precision="fp8")
    one = predict(knowledge, Workload(**work, concurrency=1), "h100-sxm", 2)
    assert one.parallelism == "1 replica x TP2"
    held = predict(knowledge, Workload(**work, concurrency=1, config=RunConfig(tp=1)), "h100-sxm", 2)
    load = held.serving_load
    assert load is not None and load.in_flight_per_replica == 1
    # one client: throughput is its own output over its own end-to-end time, whatever the replicas
    assert load.output_tok_s == pytest.approx(500 / load.e2e_s.mean, rel=0.02)
    assert held.throughput.value == pytest.approx(load.output_tok_s, rel=0.02)
    idle = "1 request in flight keeps 1 of the 2 replicas busy; the other 1 idle"
    assert any(idle in n for n in held.notes)
    assert one.throughput.value > held.throughput.value


def test_the_targets_note_agrees_with_the_figures_shown(knowledge) -> None:
    """At no load predict shows the per-token time of the replica kept full (70 ms on one H100 for an 8B),
    over a 50 ms TPOT target: the note says the figure shown misses it, never that the target is held;
    the first token, within its target, is said to meet it."""
    work = Workload(model="llama-3.1-8b", kind="inference", ttft_ms=500, tpot_ms=50)
    pred = predict(knowledge, work, "h100-sxm", 1, Constraints())
    note = next(n for n in pred.notes if n.startswith("latency targets"))
    tpot, ttft = pred.serving_tpot_ms.p50, pred.serving_ttft_ms.p50
    assert tpot > 50 and ttft < 500, (tpot, ttft)
    assert "held" not in note, note
    assert f"TPOT <= 50 ms (the {tpot:,.3g} ms shown misses it)" in note, note
    assert f"TTFT <= 500 ms (the {ttft:,.3g} ms shown meets it)" in note, note
