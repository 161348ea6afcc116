"""The one serving search as recommend and predict use it: stated values held, one default engine, SLO
percentiles, capacity and the learned maximum from one model."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from advisor.answer.predict import predict
from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.question.vocab import DEFAULT_ENGINE

SERVE_8B = dict(model="llama-3.1-8b", kind="inference", requests_per_s=20, tpot_ms=50, ttft_ms=500)


def test_a_stated_tp_is_every_serving_plans_tp(knowledge) -> None:
    w = Workload(model="llama-2-13b", kind="inference", config=RunConfig(tp=2))
    report = recommend(knowledge, w, Constraints(top=10))
    assert report.plans
    for plan in report.plans:
        assert plan.layout.tp == 2
        assert plan.configuration["tp"].value == 2 and plan.configuration["tp"].source == "given"
    p = predict(knowledge, w, "h100-sxm", 4)
    assert p.layout.tp == 2 and p.layout.dp == 2


def test_a_stated_tp_wider_than_a_server_is_served_over_whole_servers(knowledge) -> None:
    """A stated TP over whole servers (SGLang's --tp 16 --nnodes 2) is answered, its all-reduces over the
    servers' network; a TP that is not a whole number of servers is still refused, in one line."""
    from advisor.question.errors import InputError

    w = Workload(model="llama-2-13b", kind="inference", config=RunConfig(tp=2))
    report = recommend(knowledge, w, Constraints(top=40))
    assert all(p.layout.tp == 2 for p in report.plans)
    across = predict(knowledge, w, "gh200", 2)  # one GPU a server: TP 2 spans two of them
    assert across.layout.tp == 2 and across.nodes == 2
    odd = Workload(model="llama-2-13b", kind="inference", config=RunConfig(tp=20))  # 40 heads: 20 divides
    with pytest.raises(InputError, match="not a whole number of them"):
        predict(knowledge, odd, "h100-sxm", 40)


def test_a_tp_group_over_two_servers_all_reduces_slower_than_inside_one() -> None:
    """The measured multi-server all-reduce (nccl-tests over the H100's InfiniBand) prices a TP-16 group's
    layer collectives above a TP-8 group's inside one server, at every message size."""
    from advisor.catalog.loader import load_knowledge
    from advisor.job.shape import arch_of
    from advisor.physics.serving_ops import comm_curve

    k = load_knowledge()
    gpu, arch = k.gpu("h100-sxm"), arch_of(k.model("llama-3.1-70b"))
    assert arch is not None
    inside, across = comm_curve(gpu, arch, 8, 1, None), comm_curve(gpu, arch, 16, 1, None)
    assert all(a > i for a, i in zip(across, inside, strict=True))


def test_the_cli_gives_tp2_plans_when_asked() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor.cli.main",
            "recommend",
            "--workload",
            "inference",
            "--model",
            "llama-2-13b",
            "--tp",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if re.match(r"^\d+\s", line) and "replica" in line]
    assert rows and all("TP2" in line for line in rows)
    assert "tp 2 (given)" in done.stdout


def test_predict_holds_a_stated_batch(knowledge) -> None:
    base = dict(model="llama-3.1-8b", kind="inference", prompt_tokens=512, output_tokens=256)
    full = predict(knowledge, Workload(**base), "h100-sxm", 1)
    small = predict(knowledge, Workload(**base, batch_size=8), "h100-sxm", 1)
    assert small.configuration["batch"].value == 8 and small.configuration["batch"].source == "given"
    assert small.throughput is not None and full.throughput is not None
    assert small.throughput.value < full.throughput.value / 2
    assert small.serving_tpot_ms is not None and full.serving_tpot_ms is not None
    assert small.serving_tpot_ms.p50 < full.serving_tpot_ms.p50


def test_one_default_engine_in_notes_configuration_and_launch(knowledge) -> None:
    report = recommend(knowledge, Workload(**SERVE_8B), Constraints(top=1))
    plan = report.plans[0]
    assert plan.configuration["engine"].value == DEFAULT_ENGINE
    assert plan.serving is not None and plan.serving.engine == DEFAULT_ENGINE
    assert any(n.startswith(f"engine {DEFAULT_ENGINE} (default") for n in (a.text for a in report.notes))
    assert report.launch is not None and report.launch.serve.startswith(f"{DEFAULT_ENGINE} serve")


def test_a_given_engine_is_served_and_launched(knowledge) -> None:
    w = Workload(**SERVE_8B, config=RunConfig(engine="sglang"))
    report = recommend(knowledge, w, Constraints(top=1))
    assert report.plans[0].serving is not None and report.plans[0].serving.engine == "sglang"
    assert report.launch is not None and report.launch.serve.startswith("python -m sglang.launch_server")
    assert any("sglang" in n and "measured" in n for n in (a.text for a in report.notes))


def test_a_higher_slo_percentile_needs_at_least_as_much(knowledge) -> None:
    def plan(q: int):
        w = Workload(**SERVE_8B, slo_percentile=q)
        return recommend(knowledge, w, Constraints(top=1, gpus=("h100-sxm",))).plans[0]

    p50, p99 = plan(50), plan(99)
    assert p50.serving is not None and p99.serving is not None
    assert p99.serving.percentile == 99 and p50.serving.percentile == 50
    assert p99.count >= p50.count
    assert p99.serving.max_rate_rps is not None and p99.serving.max_rate_rps >= 20
    assert p99.serving.ttft_ms.p50 <= 500 and p99.serving.tpot_ms.p50 <= 50
    cost = p99.serving.usd_per_million_output_tokens
    assert cost is not None and 0 < cost.p10 <= cost.p50 <= cost.p90


def test_predict_headline_is_the_learned_maximum(knowledge) -> None:
    w = Workload(model="llama-2-70b", kind="inference", precision="fp8", prompt_tokens=700, output_tokens=294)
    ratio = {}
    for gpu in ("h200", "h100-sxm"):
        p = predict(knowledge, w, gpu, 8)
        assert p.throughput is not None
        note = next(n for n in p.notes if n.startswith("learned max throughput"))
        per_gpu = float(note.split()[3].replace(",", ""))
        assert per_gpu * 8 == pytest.approx(p.throughput.value, rel=0.01)
        ratio[gpu] = p.throughput.value
    assert 1.0 < ratio["h200"] / ratio["h100-sxm"] < 1.6


def test_slo_percentile_flag_is_refused_for_training() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor.cli.main",
            "recommend",
            "--model",
            "llama-2-7b",
            "--slo-percentile",
            "99",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "slo-percentile" in done.stderr


def test_recommend_holds_a_stated_batch_per_replica(knowledge) -> None:
    w = Workload(**SERVE_8B, batch_size=16)
    report = recommend(knowledge, w, Constraints(top=5, gpus=("h100-sxm",)))
    assert report.plans
    for plan in report.plans:
        assert plan.serving is not None and plan.serving.batch_per_replica == 16
        assert plan.serving.prefill_replicas == 0
        assert plan.configuration["batch"].source == "given"


def test_over_the_gpu_limit_says_the_fewest_gpus_that_serve(knowledge) -> None:
    """A 70B on one H100 at most: the why-not line names the smallest replica that serves (TP2, 2 GPUs),
    not the widest shape tried (TP8 x PP8, 64 GPUs), as if 64 were needed."""
    w = Workload(model="llama-3.1-70b", kind="inference")
    report = recommend(knowledge, w, Constraints(gpus=["h100-sxm"], max_gpus=1))
    assert report.nothing_fits and report.why_not
    assert report.why_not[0].startswith("h100-sxm x2: needs 2 GPUs"), report.why_not


def test_with_no_plan_the_engine_note_still_names_its_measured_runs(knowledge) -> None:
    """Nothing fits (a 70B on one H100): the engine note says whose measured runs the efficiencies come
    from, as with a plan, never 'no measured runs of it or its stand-in' for an engine that has them."""
    w = Workload(model="llama-3.1-70b", kind="inference", config=RunConfig(engine="trtllm"))
    report = recommend(knowledge, w, Constraints(gpus=["h100-sxm"], max_gpus=1))
    note = next(n.text for n in report.notes if n.text.startswith("engine trtllm"))
    assert report.nothing_fits and "measured trtllm runs" in note and "no measured runs" not in note, note
