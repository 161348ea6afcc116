"""Issue 29: --benchmark-script DIR writes the short run that settles the chosen plan: a torchtitan run of
20-100 steps of exactly the plan's layout (training) or vllm bench serve (serving), and the calibrate
command that reads its output."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.answer.benchmark import benchmark_for
from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.job.resolve import resolve_job

sys.path.insert(0, str(Path(__file__).parents[1] / "fuzz"))
from fuzz_cases import run_in_process


@pytest.fixture(scope="module")
def cheapest(knowledge):
    w = Workload(model="llama-3.1-8b", kind="pretrain", tokens=100e9)
    return recommend(knowledge, w, Constraints(budget_usd=50000, deadline_hours=336, objective="cheapest"))


def _flag(text: str, name: str) -> int:
    return int(re.search(rf"--{re.escape(name)} (\d+)", text).group(1))


def test_training_script_runs_the_plans_layout(knowledge, cheapest) -> None:
    files = benchmark_for(knowledge, cheapest)
    script, plan = files["benchmark.sh"], cheapest.plans[0]
    lay = plan.layout
    steps = _flag(script, "training.steps")
    assert 20 <= steps <= 100
    degrees = [
        _flag(script, f"parallelism.{d}")
        for d in ("tensor_parallel_degree", "pipeline_parallel_degree", "context_parallel_degree")
    ]
    dp = _flag(script, "parallelism.data_parallel_shard_degree") * _flag(
        script, "parallelism.data_parallel_replicate_degree"
    )
    assert degrees[0] * degrees[1] * degrees[2] * dp == plan.count
    assert _flag(script, "training.global_batch_size") == lay.micro_batch * lay.grad_accum * lay.dp
    assert f"--nproc-per-node {plan.count // plan.nodes}" in script
    assert f"gpu-advisor calibrate $LOG --gpu {plan.gpu} --count {plan.count}" in script
    assert "tps:" in files["BENCHMARK.md"] and "would change" not in files["BENCHMARK.md"]
    settles = next(r for r in plan.reasons if r.startswith("would change: ")).removeprefix("would change: ")
    assert settles in files["BENCHMARK.md"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_scripts_are_valid_bash(knowledge, cheapest, tmp_path) -> None:
    serving = recommend(
        knowledge,
        Workload(model="llama-3.1-8b", kind="inference", requests_per_s=20, tpot_ms=50),
        Constraints(),
    )
    for report in (cheapest, serving):
        path = tmp_path / f"{report.job.kind}.sh"
        path.write_text(benchmark_for(knowledge, report)["benchmark.sh"])
        assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    text = benchmark_for(knowledge, serving)["benchmark.sh"]
    assert "vllm bench serve" in text and "--save-result" in text and "--request-rate 20" in text


def test_cli_writes_the_folder_and_refuses_to_overwrite(tmp_path) -> None:
    folder = tmp_path / "bench"
    args = ["recommend", "--model", "llama-3.1-8b", "--workload", "lora", "--tokens", "1e7",
            "--max-gpus", "8", "--benchmark-script", str(folder)]  # fmt: skip
    first = run_in_process(args)
    assert first.code == 0, first.stderr
    assert (folder / "benchmark.sh").stat().st_mode & 0o100 and (folder / "BENCHMARK.md").exists()
    again = run_in_process(args)
    assert again.code == 2 and "--force" in again.stderr


def test_script_names_the_plans_stack_never_silently_torchtitan(knowledge, cheapest) -> None:
    """A plan on another stack than torchtitan: the torchtitan script says which stack the plan assumed,
    that only torchtitan is scripted, and how to calibrate the plan's own stack; re-running is told to
    name torchtitan, since a profile's runs move only plans of their own stack."""
    stack = resolve_job(knowledge, cheapest.workload).stack
    assert stack != "torchtitan"
    files = benchmark_for(knowledge, cheapest)
    for text in files.values():
        words = " ".join(text.replace("\n# ", " ").split()).lower()
        assert f"the plan assumed the {stack} stack, and only torchtitan is scripted" in words
    assert f"--stack {stack}" in files["BENCHMARK.md"]
    assert "--stack torchtitan --profile benchmark" in files["BENCHMARK.md"]
    titan = recommend(
        knowledge,
        Workload(model="llama-3.1-8b", kind="pretrain", tokens=100e9, config=RunConfig(stack="torchtitan")),
        Constraints(budget_usd=50000, deadline_hours=336, objective="cheapest"),
    )
    same = benchmark_for(knowledge, titan)
    assert "the plan assumed" not in same["benchmark.sh"] + same["BENCHMARK.md"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_adapters_run_the_users_own_stack_command(knowledge, tmp_path) -> None:
    """torchtitan trains no adapters: a LoRA plan's script runs the user's own command of its stack (usage
    and exit 2 without one), keeps its log and prints calibrate for the plan's stack and workload."""
    lora = Workload(model="llama-3.1-8b", kind="lora", tokens=1e7)
    report = recommend(knowledge, lora, Constraints(max_gpus=8))
    script, stack = benchmark_for(knowledge, report)["benchmark.sh"], resolve_job(knowledge, lora).stack
    assert "torchtitan.train" not in script
    assert "--workload lora" in script and f"--stack {stack}" in script
    path = tmp_path / "benchmark.sh"
    path.write_text(script)
    bare = subprocess.run(["bash", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert bare.returncode == 2 and "usage: bash benchmark.sh" in bare.stderr
    ran = subprocess.run(["bash", str(path), "echo", "step 1"], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0 and "step 1" in ran.stdout
    assert (tmp_path / "benchmark-llama-3.1-8b.log").read_text() == "step 1\n"
    assert "gpu-advisor calibrate" in ran.stderr
