"""CLI tests through subprocess: help, formats, exit codes, one-line errors, atomic no-clobber output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

COMMANDS = [
    "gpus",
    "models",
    "prices",
    "predict",
    "recommend",
    "checklist",
    "tco",
    "cost",
    "model",
    "calibrate",
    "serve",
]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=120,
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_help_on_every_command(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0 and "usage:" in result.stdout


def test_top_level_help_lists_commands() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("recommend", "predict", "checklist", "tco"):
        assert command in result.stdout


def test_help_imports_neither_sklearn_nor_textual() -> None:
    code = (
        "import sys\nfrom advisor.cli.main import main\ntry:\n    main(['recommend', '--help'])\n"
        "except SystemExit:\n    pass\nheavy = [m for m in ('sklearn', 'textual', 'numpy', 'plotext', "
        "'pydantic') "
        "if m in sys.modules]\nprint('HEAVY:' + ','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip().splitlines()[-1] == "HEAVY:"


@pytest.mark.parametrize(
    "args,needle",
    [
        (["recommend", "--model", "llama-9"], "--model: 'llama-9' is not a catalogue model; did you mean"),
        (["recommend", "--model", "llama-2-7b", "--budget", "lots"], "--budget: 'lots' is not a number"),
        (["recommend", "--model", "llama-2-7b", "--budget", "-5"], "--budget: '-5' must be greater than 0"),
        (
            ["recommend", "--model", "llama-2-7b", "--deadline", "soon"],
            "--deadline: 'soon' is not a duration",
        ),
        (
            ["recommend", "--model", "llama-2-7b", "--workload", "dance"],
            "--workload: 'dance' is not accepted; one of pretrain, finetune",
        ),
        (["recommend", "--model", "llama-2-7b", "--gpu", "h1000"], "--gpu: 'h1000' is not a catalogue GPU"),
        (
            ["recommend", "--model", "llama-2-7b", "--params", "7B"],
            "--params: 7e+09 is given with another model",
        ),
        (["predict", "--model", "llama-2-7b", "--gpu", "v100-16gb", "--precision", "bf16"], "has no bf16"),
        (
            ["predict", "--model", "resnet50", "--gpu", "h100", "--count", "3.5"],
            "--count: '3.5' must be a whole",
        ),
        (["checklist", "gremlins"], "unknown error type 'gremlins'; accepted: oom"),
        # A whole number's limit exactly (4.1943e+06 named no number a user could type at the limit).
        (["predict", "--model", "llama-2-7b", "--gpu", "h100", "--seq-len", "1e9"], "at most 4,194,304;"),
        (
            ["recommend", "--model", "llama-2-7b", "--precision", "int4", "--workload", "lora"],
            "--precision: 'int4' is for inference",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], needle: str) -> None:
    result = run(*args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (["recomend"], "did you mean 'recommend'?"),
        (
            ["recommend", "--modle", "llama-2-7b"],
            "unrecognized arguments: --modle llama-2-7b; did you mean '--model'?",
        ),
        (["recommend", "--model", "llama-2-7b", "--workload", "finetuen"], "did you mean 'finetune'?"),
        (["recommend", "--model", "llama3-8b"], "did you mean 'llama-3.1-8b'?"),
        (["recommend", "--model", "llama-2-7b", "--format", "jsno"], "did you mean 'json'?"),
        (
            ["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--cuont", "2"],
            "did you mean '--count'?",
        ),
        (["checklist", "oomm"], "unknown error type 'oomm'; did you mean 'oom'?"),
        # Another command's flag: named as such (not "did you mean '--recompute'?"), with what this one takes.
        (
            ["recommend", "--model", "llama-2-7b", "--count", "8"],
            "--count is a flag of predict, tco, calibrate, not recommend (it searches the GPU count",
        ),
    ],
)
def test_near_misses_are_suggested(args: list[str], needle: str) -> None:
    result = run(*args)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and needle in lines[0], result.stderr


def test_an_abbreviated_flag_is_not_taken_for_the_whole() -> None:
    result = run("recommend", "--mod", "llama-2-7b", "--budget", "1k")
    assert result.returncode == 2 and "unrecognized arguments: --mod" in result.stderr, result.stderr


def test_top_level_help_lists_each_command_once() -> None:
    text = run("--help").stdout
    for command in (
        "recommend",
        "predict",
        "checklist",
        "tco",
        "cost",
        "prices",
        "gpus",
        "calibrate",
        "serve",
    ):
        assert len([line for line in text.splitlines() if line.strip().startswith(command)]) == 1, command
    # fleet validate takes no file (it checks the simulator): the synopsis gives FILE.toml to plan alone.
    fleet = next(line for line in text.splitlines() if line.strip().startswith("fleet"))
    assert fleet.split()[:3] == ["fleet", "plan", "FILE.toml|validate"], fleet


def test_recommend_help_is_grouped_with_examples_and_short() -> None:
    text = subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", "recommend", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100", "PYTHONPATH": str(Path(__file__).parents[2])},
    ).stdout
    for group in ("workload:", "constraints:", "configuration", "examples:"):
        assert group in text
    # 130: 120, the serving load's concurrency and engine flags, and --benchmark-script (issue 29); 131 with
    # --fused-loss; 132 with a custom shape's --head-dim (Qwen3, Gemma: heads wider than hidden / heads);
    # 133 with --prefix-cache-hit, 134 with --request-lengths, 135 with --profile, 136 with --moe-dispatcher
    # (one line each)
    assert "gpu-advisor recommend --model" in text and len(text.splitlines()) <= 136


def test_headroom_help_states_the_default_that_is_applied(knowledge) -> None:
    text = run("recommend", "--help").stdout
    applied = knowledge.assumptions.memory["headroom"].value
    assert f"(default {applied:g}" in " ".join(text.split()), text


def test_recommend_json_schema() -> None:
    result = run(
        "recommend",
        "--model",
        "llama-2-70b",
        "--workload",
        "finetune",
        "--precision",
        "bf16",
        "--budget",
        "20000",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    plan = data["plans"][0]
    for key in (
        "gpu",
        "count",
        "nodes",
        "parallelism",
        "precision",
        "memory_per_gpu_gb",
        "hours",
        "cost_usd",
        "reasons",
    ):
        assert key in plan
    assert set(plan["hours"]) == {"p10", "p50", "p90"} and set(plan["cost_usd"]) >= {"low", "high"}


def test_recommend_table_says_prices_as_of() -> None:
    result = run(
        "recommend",
        "--model",
        "llama-2-70b",
        "--workload",
        "finetune",
        "--precision",
        "bf16",
        "--budget",
        "20000",
    )
    assert result.returncode == 0 and "prices as of 20" in result.stdout and "Why not:" in result.stdout


def test_nothing_fits_exits_1_with_reasons() -> None:
    result = run("recommend", "--model", "llama-3.1-405b", "--workload", "pretrain", "--budget", "100")
    assert result.returncode == 1
    assert "No plan fits." in result.stdout and "Why not:" in result.stdout


def test_predict_json_fields() -> None:
    result = run(
        "predict",
        "--model",
        "resnet50",
        "--gpu",
        "a100-80gb-sxm",
        "--count",
        "8",
        "--precision",
        "fp16",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    t = data["throughput"]
    assert t["unit"] == "images/s" and t["p10"] <= t["value"] <= t["p90"]
    assert {"per_gpu_gb", "fits", "breakdown"} <= set(data["memory"]) and data["memory"]["fits"]
    assert data["step_time_s"]["p50"] > 0 and 0 < data["efficiency"]["p50"] <= 1
    assert data["layout"]["micro_batch"] > 1  # the benchmarks' batch, since none was given


def test_output_file_is_atomic_and_never_clobbered(tmp_path: Path) -> None:
    target = tmp_path / "plan.toml"
    args = ["recommend", "--model", "llama-2-7b", "--workload", "lora", "--tokens", "1e8", "-o", str(target)]
    first = run(*args)
    assert first.returncode == 0, first.stderr
    data = tomllib.loads(target.read_text())
    assert data["chosen"]["gpu"]
    target.write_text("precious")
    second = run(*args)
    assert second.returncode == 2 and "exists; pass --force" in second.stderr
    assert target.read_text() == "precious"
    third = run(*args, "--force")
    assert third.returncode == 0 and tomllib.loads(target.read_text())["chosen"]["gpu"]
    assert [p.name for p in tmp_path.iterdir()] == ["plan.toml"]  # no temporary file left behind


def test_output_format_follows_the_file_name_without_format(tmp_path: Path) -> None:
    """-o plan.toml writes TOML and -o plan.json JSON (the table only under any other name), for recommend
    and fleet plan alike; --format, when given, wins over any other name."""
    rec = ["recommend", "--model", "llama-2-7b", "--workload", "lora", "--tokens", "1e8"]
    assert run(*rec, "-o", str(tmp_path / "plan.json")).returncode == 0
    assert json.loads((tmp_path / "plan.json").read_text())["plans"]
    fleet = ["fleet", "plan", str(Path(__file__).parents[2] / "examples" / "lab-portfolio.toml")]
    result = run(*fleet, "-o", str(tmp_path / "fleet.toml"))
    assert result.returncode == 0, result.stderr
    assert tomllib.loads((tmp_path / "fleet.toml").read_text())


def test_a_format_the_file_name_contradicts_is_refused(tmp_path: Path) -> None:
    """--format json -o plan.toml would write JSON that --from plan.toml cannot read back: one line naming
    both, exit 2, nothing written; a name that says no format (plan.txt) takes any."""
    rec = ["recommend", "--model", "llama-2-7b", "--workload", "lora", "--tokens", "1e8"]
    bad = run(*rec, "--format", "json", "-o", str(tmp_path / "plan.toml"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "-o" in bad.stderr and "plan.toml" in bad.stderr and "--format json" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and not list(tmp_path.iterdir())
    assert run(*rec, "--format", "json", "-o", str(tmp_path / "plan.txt")).returncode == 0


def test_from_spec_reproduces_plans(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    assert (
        run(
            "recommend", "--model", "mistral-7b", "--workload", "qlora", "--budget", "300", "-o", str(spec)
        ).returncode
        == 0
    )
    again = run("recommend", "--from", str(spec), "--format", "toml")
    assert again.returncode == 0, again.stderr
    before, after = tomllib.loads(spec.read_text()), tomllib.loads(again.stdout)
    assert after["chosen"] == before["chosen"] and after["alternatives"] == before["alternatives"]
    override = run("recommend", "--from", str(spec), "--budget", "5", "--format", "json")
    assert override.returncode == 1  # the flag given on the command line wins over the file


def test_checklist_prints_and_searches() -> None:
    listing = run("checklist")
    assert listing.returncode == 0 and "oom" in listing.stdout and "nccl-hang" in listing.stdout
    oom = run("checklist", "oom")
    assert oom.returncode == 0 and "Steps:" in oom.stdout and "nvidia-smi" in oom.stdout
    found = run("checklist", "--search", "NCCL_DEBUG", "--format", "json")
    ids = [e["id"] for e in json.loads(found.stdout)]
    assert "nccl-hang" in ids


def test_catalogues_print() -> None:
    assert "h100-sxm" in run("gpus").stdout
    assert "llama-2-70b" in run("models").stdout
    prices = run("prices", "--gpu", "h100-sxm", "--pricing", "spot")
    assert prices.returncode == 0 and "spot" in prices.stdout and "on-demand" not in prices.stdout


def test_a_mistyped_file_name_is_answered_with_the_nearest_file(tmp_path: Path) -> None:
    """--from plan.tml beside plan.toml: one line naming the value and the nearest file there, exit 2;
    with nothing near, the line alone."""
    (tmp_path / "plan.toml").write_text("", encoding="utf-8")
    result = run("recommend", "--from", "plan.tml", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "gpu-advisor recommend: error: --from 'plan.tml': no such file; did you mean 'plan.toml'?"
    ]
    far = run("fleet", "plan", str(tmp_path / "sub" / "zzz.toml"))
    assert far.returncode == 2 and far.stderr.strip().endswith("no such file"), far.stderr
