"""Calibration that transfers: one training run moves each part of the step by what it measured (a TP8 run
says more about the fabric than about compute, and a PP2 plan moves by its own shares), and one serving
result moves the engine's efficiencies, so the same deployment at another concurrency is simulated with
them rather than scaled by one factor."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from calibrate_cli import LOGS, cli, predicted
from calibrate_cli import MEGATRON_8B as MEGATRON_8B_FLAGS

MEGATRON_8B = [*MEGATRON_8B_FLAGS, "--global-batch", "128"]


def per_gpu(pred: dict) -> float:
    return pred["throughput"]["value"] / 8


def factors(note: str) -> dict[str, float]:
    """The cluster factors an answer names: compute time and exposed communication."""
    got = re.search(r"compute time x([\d.]+), exposed communication x([\d.]+)", note)
    assert got, note
    return {"compute": float(got.group(1)), "comm": float(got.group(2))}


def test_a_tp8_run_moves_a_pp2_plan_by_its_own_parts(capsys) -> None:
    """An 8-GPU Llama-3.1-8B Megatron run at TP8 (2,451 tokens/s per GPU, 0.49x the model's figure):
    TP8's step waits on its all-gathers and reduce-scatters (about a quarter of it), so the run says more
    about the fabric than about compute; a PP2 plan, with next to no exposed traffic, moves by its own
    shares of that, less than the run's own factor."""
    tp8 = [*MEGATRON_8B, "--tp", "8", "--pp", "1"]
    pp2 = [*MEGATRON_8B, "--tp", "1", "--pp", "2"]
    before_tp8, before_pp2 = per_gpu(predicted(capsys, *tp8)), per_gpu(predicted(capsys, *pp2))
    code, _, err = cli(capsys, "calibrate", str(LOGS / "runs_megatron_tp8.csv"), "--trust")
    assert code == 0, err
    after_tp8 = predicted(capsys, *tp8)
    after_pp2 = predicted(capsys, *pp2)
    assert abs(per_gpu(after_tp8) / 2451 - 1) < 0.03  # the run itself, reproduced
    assert abs(before_tp8 / 2451 - 1) > 0.3, "the uncalibrated figure was far off: the test can fail"
    note = next(n for n in after_pp2["notes"] if "calibrated on 1 of your runs" in n)
    f = factors(note)
    # Per unit of share, the TP8 run's shortfall went to communication far more than to compute.
    assert f["comm"] > 1.2 and abs(math.log(f["comm"])) > 3 * abs(math.log(f["compute"]))
    share = {p["op"]: p["share"] for p in after_pp2["step_breakdown"]["parts"]}
    assert share.get("TP/SP collectives", 0.0) == 0.0  # PP2 has no tensor-parallel traffic to slow down
    run_factor, moved = per_gpu(after_tp8) / before_tp8, per_gpu(after_pp2) / before_pp2
    assert run_factor < moved < 1.0  # the same direction, by less than the run's own factor


def test_each_plan_moves_by_its_own_shares_of_what_was_learned() -> None:
    """The correction's shared parts, isolated from the per-configuration term (plans far from the run): a
    plan with no exposed communication moves by its compute share of the compute coefficient alone; one
    that waits on communication moves by that and its communication share of the fabric coefficient."""
    from advisor.learned.calibration.multiplier import TRAINING_SCALES, correction

    run = {"log_params": math.log(8e9), "log_tp": math.log(8), "share_compute": 0.75, "share_comm": 0.25}
    ratio = math.log(0.6)  # measured 0.6x the model
    far = {"log_params": math.log(8e9) + 20 * math.log(4)}  # beyond the per-configuration correlation
    quiet = {**far, "share_compute": 1.0, "share_comm": 0.0}
    busy = {**far, "share_compute": 0.6, "share_comm": 0.4}
    own = correction(run, [(run, ratio)], "training", TRAINING_SCALES)
    a = correction(quiet, [(run, ratio)], "training", TRAINING_SCALES)
    b = correction(busy, [(run, ratio)], "training", TRAINING_SCALES)
    assert own is not None and a is not None and b is not None
    coef = dict(a.parts)
    assert a.log_mean == pytest.approx(coef["share_compute"], rel=1e-9)
    assert b.log_mean == pytest.approx(0.6 * coef["share_compute"] + 0.4 * coef["share_comm"], rel=1e-9)
    assert ratio < own.log_mean < b.log_mean < a.log_mean < 0.0
    assert coef["share_comm"] < coef["share_compute"] < 0.0  # the fabric took more of the shortfall


def _vllm_result(tmp_path: Path, figures: dict[str, float], concurrency: int) -> Path:
    data = json.loads((LOGS / "vllm_bench_serve_llama31_8b_c32.json").read_text())
    data.update(
        max_concurrency=concurrency,
        output_throughput=figures["output_tok_s"],
        median_ttft_ms=figures["ttft_ms"],
        median_tpot_ms=figures["tpot_ms"],
    )
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    return path


def test_a_serving_result_at_8_moves_the_prediction_at_64(capsys, tmp_path: Path, knowledge) -> None:
    """A world where the engine's host takes 30 ms an iteration (the GPU's work hides it once it is longer):
    its result at concurrency 8 (simulated in that world) is calibrated, and the same deployment at 64 is
    then predicted within 5% of that world's figures, where the result's own ratios applied as one factor
    are 20% off."""
    from advisor.answer.calibration_runs import simulated
    from advisor.answer.predict import predict
    from advisor.job.door import question
    from advisor.job.inputs import Workload
    from advisor.learned.calibration.serving import HOST_UNIT_S
    from advisor.learned.efficiency.select import efficiency_model

    base = efficiency_model(knowledge)

    def at(concurrency: int) -> tuple[Workload, str, int]:
        w = question(
            Workload,
            {
                "model": "llama-3.1-8b",
                "kind": "inference",
                "prompt_tokens": 1024,
                "output_tokens": 256,
                "batch_size": concurrency,
                "config": {"engine": "vllm"},
            },
        )
        return w, "h100-sxm", 1

    world = (0.0, 0.0, math.log(1.0 + 30e-3 / HOST_UNIT_S), 0.0)  # 30 ms of host time an iteration
    plain = (0.0,) * 4
    truth8, truth64 = simulated(knowledge, at(8), base, world), simulated(knowledge, at(64), base, world)
    model8, model64 = simulated(knowledge, at(8), base, plain), simulated(knowledge, at(64), base, plain)
    result = str(_vllm_result(tmp_path, truth8, 8))
    # 0.48x the model's throughput: past the 2x check, stored with --trust (the world is known here).
    code, _, err = cli(capsys, "calibrate", result, "--gpu", "h100-sxm", "--count", "1", "--trust")
    assert code == 0, err
    calibrated = efficiency_model(knowledge)
    got8 = predict(knowledge, at(8)[0], "h100-sxm", 1, None, calibrated)
    assert abs(got8.throughput.value / truth8["output_tok_s"] - 1) < 0.03
    assert abs(got8.serving_tpot_ms.p50 / truth8["tpot_ms"] - 1) < 0.03
    got64 = predict(knowledge, at(64)[0], "h100-sxm", 1, None, calibrated)
    assert abs(got64.throughput.value / truth64["output_tok_s"] - 1) < 0.05
    assert abs(got64.serving_tpot_ms.p50 / truth64["tpot_ms"] - 1) < 0.05
    assert abs(got64.serving_ttft_ms.p50 / truth64["ttft_ms"] - 1) < 0.05
    flat = model64["output_tok_s"] * truth8["output_tok_s"] / model8["output_tok_s"]
    assert abs(flat / truth64["output_tok_s"] - 1) > 0.2, "one factor would be far off: the test can fail"
    note = next(n for n in got64.notes if "efficiencies on h100-sxm moved" in n)
    assert "profile h100-sxm-vllm" in note and "per-iteration cost x" in note


def test_recommend_simulates_serving_plans_with_the_profile(capsys, tmp_path: Path) -> None:
    ask = [
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "inference",
        "--engine",
        "vllm",
        "--gpu",
        "h100-sxm",
        "--requests-per-s",
        "2",
        "--format",
        "json",
    ]
    code, out, err = cli(capsys, *ask)
    assert code == 0, err
    before = json.loads(out)
    slow = {"output_tok_s": 700.0, "ttft_ms": 400.0, "tpot_ms": 12.0}  # every figure slower than the model
    code, _, err = cli(
        capsys, "calibrate", str(_vllm_result(tmp_path, slow, 8)), "--gpu", "h100-sxm", "--count", "1"
    )
    assert code == 0, err
    code, out, err = cli(capsys, *ask)
    assert code == 0, err
    after = json.loads(out)
    assert any("h100-sxm plans simulated at the vllm efficiencies" in n["text"] for n in after["notes"])
    assert any("profile h100-sxm-vllm" in n["text"] for n in after["notes"])
    assert after["plans"][0]["serving"] != before["plans"][0]["serving"]


def test_the_shipped_priors_say_what_they_were_fitted_on() -> None:
    from advisor.catalog.common import shipped_root
    from advisor.learned.calibration.priors import FILE, prior, provenance

    data = json.loads(shipped_root().joinpath(FILE).read_text())
    assert prior("training")["comm"] == data["training"]["comm"]
    assert prior("serving_knobs")["memory"] == data["serving_knobs"]["memory"]
    meta = provenance()
    assert meta["written_by"] == "python benchmarks/bench_calibration.py --refit"
    assert "llm_benchmarks.csv" in meta["training"]["fitted_on"]
    assert "serving_benchmarks.csv" in meta["serving_knobs"]["fitted_on"]
