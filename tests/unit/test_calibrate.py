"""Calibration on the user's runs: each log format read, stored per profile, and predict then giving exactly
the figure calibrate printed (both through the CLI entry, in process)."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
from calibrate_cli import LOGS, MEGATRON_8B, cli, predicted

TITAN = [
    str(LOGS / "torchtitan_llama3_8b.log"),
    "--gpu",
    "h100-sxm",
    "--count",
    "8",
    "--model",
    "llama-3.1-8b",
    "--seq-len",
    "8192",
    "--micro-batch",
    "1",
]
TITAN_PREDICT = [
    "--gpu",
    "h100-sxm",
    "--count",
    "8",
    "--model",
    "llama-3.1-8b",
    "--seq-len",
    "8192",
    "--micro-batch",
    "1",
    "--workload",
    "pretrain",
    "--stack",
    "torchtitan",
]


def profiles() -> Path:
    return Path(os.environ["GPU_ADVISOR_DATA_DIR"]) / "profiles"


def same_figure(out: str) -> list[str]:
    """The predict flags calibrate printed for a run's exact configuration."""
    return re.search(r"the same figure: gpu-advisor predict (.*)", out).group(1).split()


def test_torchtitan_log_calibrates_and_predict_gives_what_calibrate_printed(capsys) -> None:
    before = predicted(capsys, *TITAN_PREDICT)["throughput"]["value"]
    code, out, _ = cli(capsys, "calibrate", *TITAN)
    assert code == 0, out
    measured = 5906.0 * 8  # the median tps after the warm-up step, times the GPUs
    printed = float(re.search(r"after ([\d,.]+)", out).group(1).replace(",", ""))
    assert same_figure(out)[: len(TITAN_PREDICT) - 2] != TITAN_PREDICT  # it holds the chosen layout too
    after = predicted(capsys, *same_figure(out))
    assert after["throughput"]["value"] == pytest.approx(printed, rel=1e-5)  # what calibrate printed
    assert abs(after["throughput"]["value"] / measured - 1) < 0.03
    assert abs(before / measured - 1) > 0.2, "the uncalibrated figure was far off: the test can fail"
    assert any("calibrated on 1 of your runs (profile h100-sxm-torchtitan)" in n for n in after["notes"])
    # A larger model on more GPUs moves by less than the full factor, with a wider interval than at the run.
    far = [
        "--gpu",
        "h100-sxm",
        "--count",
        "64",
        "--model",
        "llama-3.1-70b",
        "--seq-len",
        "8192",
        "--micro-batch",
        "1",
        "--workload",
        "pretrain",
        "--stack",
        "torchtitan",
    ]
    cal = predicted(capsys, *far)["throughput"]
    code, _, _ = cli(capsys, "calibrate", "--reset", "--profile", "h100-sxm-torchtitan")
    base = predicted(capsys, *far)["throughput"]
    factor = after["throughput"]["value"] / before
    moved = cal["value"] / base["value"]
    assert factor < moved < 1.0
    assert cal["p90"] / cal["p10"] > after["throughput"]["p90"] / after["throughput"]["p10"]


def test_hf_trainer_log_reads_its_batch_and_count(capsys) -> None:
    args = [str(LOGS / "hf_trainer_llama31_8b.log"), "--gpu", "a100-80gb-sxm", "--model", "llama-3.1-8b"]
    code, _, err = cli(capsys, "calibrate", *args)
    assert code == 2 and "--seq-len" in err and "nothing was stored" in err  # samples/s needs tokens
    code, out, _ = cli(capsys, "calibrate", *args, "--seq-len", "2048", "--dry-run")
    assert code == 0 and "count = 8" in out.replace(
        "GPUs = total batch / (per device x accumulation) = 8", ""
    )
    assert "measured throughput: 12,353.5" in out and "dry run: nothing was stored" in out
    assert not profiles().exists()
    # The composed step (issue 26) puts this Trainer run at 0.42x its prediction, past the 2x check: it is
    # refused as a possible mistake unless trusted (the refusal is asserted), then stored with --trust.
    code, _, err = cli(capsys, "calibrate", *args, "--seq-len", "2048")
    assert code == 2 and "--trust" in err and not profiles().exists()
    code, out, _ = cli(capsys, "calibrate", *args, "--seq-len", "2048", "--trust")
    assert code == 0 and "profile a100-80gb-sxm-hf: stored 1 new run(s)" in out
    got = predicted(capsys, *same_figure(out))
    assert "--micro-batch 2 " in " ".join(same_figure(out)) and "--global-batch 64" in " ".join(
        same_figure(out)
    )
    assert abs(got["throughput"]["value"] / 12353.5 - 1) < 0.03


def test_vllm_result_calibrates_serving(capsys, knowledge) -> None:
    from advisor.answer.predict import predict
    from advisor.job.inputs import RunConfig, Workload

    args = [str(LOGS / "vllm_bench_serve_llama31_8b_c32.json"), "--gpu", "h100-sxm", "--count", "1"]
    code, out, _ = cli(capsys, "calibrate", *args)
    assert code == 0, out
    from advisor.learned.efficiency.select import efficiency_model

    w = Workload(
        model="llama-3.1-8b",
        kind="inference",
        prompt_tokens=1024,
        output_tokens=256,
        batch_size=32,
        config=RunConfig(engine="vllm"),
    )
    pred = predict(knowledge, w, "h100-sxm", 1, None, efficiency_model(knowledge))
    assert abs(pred.throughput.value / 2084.0 - 1) < 0.03
    assert abs(pred.serving_ttft_ms.p50 / 198.2 - 1) < 0.03
    assert any("profile h100-sxm-vllm" in n for n in pred.notes)
    # The load line (the simulated requests' percentiles) says what the plan's figures say, calibrated too.
    load = pred.serving_load
    assert load is not None
    assert abs(load.ttft_ms.p50 / pred.serving_ttft_ms.p50 - 1) < 0.005
    assert abs(load.tpot_ms.p50 / pred.serving_tpot_ms.p50 - 1) < 0.005
    assert abs(load.output_tok_s / pred.throughput.value - 1) < 0.005


def test_a_serving_result_prints_a_predict_command_that_runs(capsys) -> None:
    """The predict command calibrate prints for a result at a concurrency runs as printed (predict takes
    no --micro-batch for inference) and gives the figure calibrate printed."""
    args = [str(LOGS / "vllm_bench_serve_llama31_8b_c32.json"), "--gpu", "h100-sxm", "--count", "1"]
    code, out, _ = cli(capsys, "calibrate", *args)
    assert code == 0, out
    command = same_figure(out)
    assert "--micro-batch" not in command and "--concurrency" in command
    printed = float(re.search(r"output_tok_s: .* after ([\d,.]+)", out).group(1).replace(",", ""))
    got = predicted(capsys, *command)["throughput"]["value"]
    assert got == pytest.approx(printed, rel=1e-5)
    assert abs(got / 2084.0 - 1) < 0.03


def test_a_serving_result_at_a_rate_or_with_its_load_given_is_read(capsys, tmp_path: Path) -> None:
    """vLLM's result at a request rate (no max_concurrency) is read at that rate; one that says neither
    (all prompts at once) asks for --concurrency (never --micro-batch, which predict refuses for serving),
    and --concurrency or --requests-per-s then reads it."""
    base = json.loads((LOGS / "vllm_bench_serve_llama31_8b_c32.json").read_text())
    base.pop("max_concurrency")
    rate = tmp_path / "rate.json"
    rate.write_text(json.dumps({**base, "request_rate": 5.0}))
    code, out, err = cli(capsys, "calibrate", str(rate), "--gpu", "h100-sxm", "--count", "1", "--dry-run")
    assert code == 0 and "request_rate 5 req/s" in out, err
    burst = tmp_path / "burst.json"
    burst.write_text(json.dumps(base))  # request_rate "inf", no max_concurrency
    args = [str(burst), "--gpu", "h100-sxm", "--count", "1"]
    code, _, err = cli(capsys, "calibrate", *args)
    assert code == 2 and "--concurrency" in err and "--micro-batch" not in err and "nothing was stored" in err
    for load in (["--concurrency", "32"], ["--requests-per-s", "5"]):
        code, out, err = cli(capsys, "calibrate", *args, *load, "--dry-run")
        assert code == 0 and "dry run: nothing was stored" in out, err


def test_sglang_results_each_a_run_and_leave_one_out_is_shown(capsys) -> None:
    code, out, _ = cli(
        capsys,
        "calibrate",
        str(LOGS / "sglang_bench_serving_llama31_8b.jsonl"),
        "--gpu",
        "h100-sxm",
        "--count",
        "1",
        "--model",
        "llama-3.1-8b",
    )
    assert code == 0, out
    assert "stored 3 new run(s)" in out and "leave-one-run-out over 3 runs" in out
    assert "each simulated at the efficiencies fitted on the others" in out
    code, out, _ = cli(capsys, "calibrate", "--list")
    assert code == 0 and "profile h100-sxm-sglang: 3 run(s)" in out


def test_megatron_log_reads_its_arguments(capsys) -> None:
    code, out, _ = cli(
        capsys,
        "calibrate",
        str(LOGS / "megatron_llama3_8b.log"),
        "--gpu",
        "h100-sxm",
        "--model",
        "llama-3.1-8b",
        "--dry-run",
    )
    assert code == 0
    measured = 128 * 8192 / ((35440.7 + 35431.9) / 2 / 1000)
    assert f"measured throughput: {measured:,.6g}" in out and "pp = 2 (from the file)" in out


def test_megatron_log_reads_the_layout_its_arguments_print(capsys, tmp_path: Path) -> None:
    """Megatron prints every argument (None where unset): no virtual stages is plain 1F1B, no recomputation
    granularity is none, and the distributed optimizer is ZeRO-1; predict chose interleaved:8 before."""
    text = (LOGS / "megatron_llama3_8b.log").read_text()
    dump = (
        "  recompute_granularity ........................... None\n"
        "  use_distributed_optimizer ....................... True\n"
        "  virtual_pipeline_model_parallel_size ............ None\n"
    )
    log = tmp_path / "megatron.log"
    log.write_text(text.replace("  world_size", dump + "  world_size", 1))
    args = [str(log), "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--dry-run"]
    code, out, err = cli(capsys, "calibrate", *args)
    assert code == 0, err
    for said in ("recompute = 'none' (from the file)", "pp_schedule = '1f1b' (from the file)"):
        assert said in out
    assert "zero = 1 (from the file)" in out
    log.write_text(
        text.replace(
            "  world_size",
            dump.replace("None\n  use", "selective\n  use").replace(
                "size ............ None", "size ............ 4"
            )
            + "  world_size",
            1,
        )
    )
    code, out, err = cli(capsys, "calibrate", *args)
    assert code == 0 and "pp_schedule = 'interleaved:4' (from the file)" in out, err
    assert "recompute = 'selective' (from the file)" in out


@pytest.mark.parametrize("name", ["no_throughput.log", "../../../README.md"])
def test_other_files_are_one_line_and_store_nothing(capsys, name: str) -> None:
    code, _, err = cli(capsys, "calibrate", str(LOGS / name), "--gpu", "h100-sxm", "--count", "8")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a run file" in err
    assert not profiles().exists()


def test_missing_input_is_named_and_far_runs_need_trust(capsys, tmp_path: Path) -> None:
    code, _, err = cli(capsys, "calibrate", *TITAN[:3])  # no count
    assert code == 2 and "count" in err and "--count" in err and "nothing was stored" in err
    slow = tmp_path / "slow.log"
    slow.write_text(re.sub(r"tps: [\d,]+", "tps: 1,500", (LOGS / "torchtitan_llama3_8b.log").read_text()))
    code, _, err = cli(capsys, "calibrate", str(slow), *TITAN[1:])
    assert code == 2 and "--trust" in err and not profiles().exists()
    code, _, _ = cli(capsys, "calibrate", str(slow), *TITAN[1:], "--trust")
    assert code == 0


def test_profiles_are_named_listed_exported_and_reset(capsys, tmp_path: Path) -> None:
    code, _, err = cli(capsys, "calibrate", *TITAN, "--profile", "Bad Name")
    assert code == 2 and "profile" in err
    assert cli(capsys, "calibrate", *TITAN, "--profile", "lab-a")[0] == 0
    code, out, _ = cli(capsys, "calibrate", "--list")
    assert "profile lab-a: 1 run(s)" in out
    # The default profile of that GPU and stack has no runs: predict is not calibrated without --profile.
    plain = predicted(capsys, *TITAN_PREDICT)
    named = predicted(capsys, *TITAN_PREDICT, "--profile", "lab-a")
    assert not any("calibrated on" in n for n in plain["notes"])
    assert any("(profile lab-a)" in n for n in named["notes"])
    target = tmp_path / "lab-a.json"
    assert cli(capsys, "calibrate", "--export", str(target), "--profile", "lab-a")[0] == 0
    assert json.loads(target.read_text())["runs"][0]["format"] == "torchtitan"
    assert cli(capsys, "calibrate", "--export", str(target), "--profile", "lab-a")[0] == 2  # no overwrite
    code, out, _ = cli(capsys, "calibrate", "--reset", "--profile", "lab-a")
    assert code == 0 and "removed" in out
    assert cli(capsys, "calibrate", "--list")[1].startswith("no calibration profiles")


@pytest.mark.parametrize("action", ["--reset", "--refresh", "--export"])
def test_a_mistyped_profile_is_refused_naming_the_profiles_and_nothing_is_made(
    capsys, tmp_path: Path, action: str
) -> None:
    assert cli(capsys, "calibrate", *TITAN, "--profile", "lab-a")[0] == 0
    extra = [str(tmp_path / "out.json")] if action == "--export" else []
    code, out, err = cli(capsys, "calibrate", action, *extra, "--profile", "lab-b")
    assert code == 2 and len(err.strip().splitlines()) == 1, out + err
    assert "'lab-b'" in err and "lab-a" in err
    assert sorted(p.name for p in profiles().iterdir()) == ["lab-a"]  # no empty profile made
    assert not (tmp_path / "out.json").exists()


def test_the_help_and_the_refusal_name_every_format_read(capsys) -> None:
    from advisor.catalog.run_logs.detect import FORMATS

    code, _, err = cli(capsys, "calibrate")
    assert code == 2 and FORMATS in err and "--refresh" in err
    with pytest.raises(SystemExit):
        cli(capsys, "calibrate", "--help")
    assert FORMATS in " ".join(capsys.readouterr().out.split())


def test_a_bad_stored_file_is_moved_aside_and_predict_answers(capsys) -> None:
    assert cli(capsys, "calibrate", *TITAN)[0] == 0
    path = profiles() / "h100-sxm-torchtitan" / "runs.json"
    path.write_text('{"format": 1, "name": "x", "runs": [{"id": 3}]}')
    code, _, err = cli(capsys, "predict", *TITAN_PREDICT)
    assert code == 0 and "moved it aside" in err
    assert any(p.name.startswith("runs.json.corrupt-") for p in path.parent.iterdir())


def test_shrinkage_follows_number_distance_and_spread() -> None:
    from advisor.learned.calibration.multiplier import TRAINING_SCALES, correction

    here = {"log_params": math.log(8e9), "log_count": math.log(8)}
    far = {"log_params": math.log(70e9), "log_count": math.log(512)}
    one = correction(here, [(here, math.log(0.7))], "training", TRAINING_SCALES)
    assert one is not None and abs(one.factor / 0.7 - 1) < 0.01 and one.nearest == 0
    away = correction(far, [(here, math.log(0.7))], "training", TRAINING_SCALES)
    assert away is not None and 0.7 < away.factor < 0.95 and away.log_sd > one.log_sd
    agree = [(dict(here, log_seq=float(i)), math.log(0.7)) for i in range(4)]
    scatter = [(dict(here, log_seq=float(i)), math.log(r)) for i, r in enumerate((0.4, 1.1, 0.5, 1.0))]
    a = correction(far, agree, "training", TRAINING_SCALES)
    b = correction(far, scatter, "training", TRAINING_SCALES)
    assert a is not None and b is not None and a.log_sd < b.log_sd


def test_drift_warns_when_the_named_version_is_newer_than_every_run(capsys) -> None:
    serve = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--workload", "inference", "--engine", "vllm"]
    newer = predicted(capsys, *serve, "--stack-version", "0.99.1")["notes"]
    assert any("vllm 0.99.1 is newer than every measured run" in n and "calibrate" in n for n in newer)
    older = predicted(capsys, *serve, "--stack-version", "0.6.0")["notes"]
    assert not any("newer than every" in n for n in older)
    # A calibration run of that version stands behind the figure: no warning.
    code, _, _ = cli(
        capsys,
        "calibrate",
        str(LOGS / "vllm_bench_serve_llama31_8b_c32.json"),
        "--gpu",
        "h100-sxm",
        "--count",
        "1",
        "--stack-version",
        "0.99.1",
    )
    assert code == 0
    assert not any(
        "newer than every" in n for n in predicted(capsys, *serve, "--stack-version", "0.99.1")["notes"]
    )


def test_runs_of_another_model_are_left_out_until_refreshed(capsys) -> None:
    assert cli(capsys, "calibrate", *TITAN)[0] == 0
    path = profiles() / "h100-sxm-torchtitan" / "runs.json"
    data = json.loads(path.read_text())
    data["runs"][0]["base_model"] = "an older model"
    path.write_text(json.dumps(data))
    notes = predicted(capsys, *TITAN_PREDICT)["notes"]
    assert any("left out" in n and "--refresh --profile h100-sxm-torchtitan" in n for n in notes)
    code, out, _ = cli(capsys, "calibrate", "--refresh", "--profile", "h100-sxm-torchtitan")
    assert code == 0 and "re-predicted 1 run(s)" in out
    assert any("calibrated on 1 of your runs" in n for n in predicted(capsys, *TITAN_PREDICT)["notes"])


def test_issue_27_runs_csv_moves_that_layout_and_most_of_the_others(capsys) -> None:
    """One 8-GPU Llama-3-8B run (3,699 tokens/s per GPU, Megatron, PP2 x DP4), given as a runs CSV."""
    # --trust: the run (an A100-class table's figure, given here for an H100) is 0.50x the prediction, at the
    # sanity gate's edge since the Megatron stack's own residual (x1.07); tested is how it moves the others.
    code, out, _ = cli(capsys, "calibrate", str(LOGS / "runs_megatron_pp2.csv"), "--trust")
    assert code == 0, out
    exact = predicted(capsys, *same_figure(out))["throughput"]["value"] / 8
    assert abs(exact / 3699 - 1) < 0.03
    common = MEGATRON_8B
    other = predicted(capsys, *common, "--tp", "2", "--pp", "2")["throughput"]["value"]
    cli(capsys, "calibrate", "--reset", "--profile", "h100-sxm-megatron")
    uncalibrated = predicted(capsys, *common, "--tp", "2", "--pp", "2")["throughput"]["value"]
    run_factor = 3699 * 8 / predicted(capsys, *same_figure(out))["throughput"]["value"]
    moved = other / uncalibrated
    # The other layout moves by most of the run's own factor (shrunk a little toward 1), never past it.
    assert run_factor < 1.0 and run_factor <= moved < 1.0 and (1 - moved) > 0.75 * (1 - run_factor)


def test_lightning_throughput_monitor_csv_is_read_per_device(capsys) -> None:
    args = [
        str(LOGS / "lightning_metrics.csv"),
        "--gpu",
        "h100-sxm",
        "--count",
        "8",
        "--model",
        "llama-3.1-8b",
        "--seq-len",
        "8192",
        "--micro-batch",
        "1",
        "--workload",
        "pretrain",
        "--dry-run",
    ]
    code, out, _ = cli(capsys, "calibrate", *args)
    assert code == 0 and "measured throughput: 47,992" in out  # median of 5,980-6,010 items/s x 8 devices


def test_a_lightning_run_is_filed_under_the_catalogues_lightning_stack(capsys) -> None:
    """A Lightning metrics.csv names no stack: it is read as fsdp (knowledge/training_stacks.toml: the
    Lightning scripts run as fsdp), said so, never under the fine-tuning default trl; --stack still wins."""
    args = [str(LOGS / "lightning_metrics.csv"), "--gpu", "h100-sxm", "--count", "8", "--model",
            "llama-3.1-8b", "--seq-len", "8192", "--micro-batch", "1", "--dry-run"]  # fmt: skip
    code, out, _ = cli(capsys, "calibrate", *args)
    assert code == 0 and "stack = 'fsdp' (assumed for a lightning run" in out, out
    code, out, _ = cli(capsys, "calibrate", *args, "--stack", "hf")
    assert code == 0 and "stack = 'hf' (from --stack)" in out and "'fsdp'" not in out, out


def test_recommend_ranks_with_the_calibration_and_names_the_profile(capsys) -> None:
    ask = [
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "pretrain",
        "--tokens",
        "1e10",
        "--stack",
        "torchtitan",
        "--gpu",
        "h100-sxm",
        "--format",
        "json",
    ]
    code, out, _ = cli(capsys, *ask)
    assert code == 0
    before = json.loads(out)["plans"][0]
    assert cli(capsys, "calibrate", *TITAN)[0] == 0
    code, out, _ = cli(capsys, *ask)
    assert code == 0
    report = json.loads(out)
    assert any("profile h100-sxm-torchtitan" in n["text"] for n in report["notes"])
    assert report["plans"][0] != before  # the measured run was 26% under the model: the plans move


def test_recommend_takes_a_named_profile(capsys) -> None:
    """The benchmark script stores its run in profile 'benchmark' and says to re-run recommend with
    --profile benchmark: recommend takes the flag, and only then uses that profile's runs."""
    ask = ["recommend", "--model", "llama-3.1-8b", "--workload", "pretrain", "--tokens", "1e10"]
    ask += ["--stack", "torchtitan", "--gpu", "h100-sxm", "--format", "json"]
    assert cli(capsys, "calibrate", *TITAN, "--profile", "benchmark")[0] == 0
    code, out, err = cli(capsys, *ask, "--profile", "benchmark")
    assert code == 0, err
    assert any("(profile benchmark)" in n["text"] for n in json.loads(out)["notes"])
    code, out, _ = cli(capsys, *ask)
    assert code == 0 and not any("(profile benchmark)" in n["text"] for n in json.loads(out)["notes"])
