"""bench_heldout asks and scores a serving row as its source ran and defines it: an offline row that states
its prompt count as that burst (--num-prompts N, every prompt at t=0, as `vllm bench serve --request-rate inf
--num-prompts N` runs); a latency as the simulated requests' mean where the row states a mean (genai-perf's
averages, result files' means), else the P50 of the answer."""

from __future__ import annotations

from tests.unit.bench_scripts import bench_script

DATA = {
    "serving_ttft_ms": {"p10": 80.0, "p50": 100.0, "p90": 150.0},
    "serving_tpot_ms": {"p10": 9.0, "p50": 10.0, "p90": 12.0},
    "serving_load": {"ttft_ms": {"p50": 100.0, "mean": 140.0}, "tpot_ms": {"p50": 10.0, "mean": 11.0}},
}


def _bench():
    return bench_script("bench_heldout")


def test_a_mean_row_is_scored_against_the_simulated_mean() -> None:
    bench = _bench()
    ttft_get = bench.SERVING_METRICS["TTFT ms"][1]
    tpot_get = bench.SERVING_METRICS["TPOT/ITL ms"][1]
    assert bench.as_published({"ttft_stat": "mean"}, "ttft_ms", DATA, ttft_get) == 140.0
    assert bench.as_published({"tpot_stat": "mean"}, "tpot_ms", DATA, tpot_get) == 11.0
    assert bench.as_published({"ttft_stat": "median"}, "ttft_ms", DATA, ttft_get) == 100.0
    assert bench.as_published({"ttft_stat": ""}, "ttft_ms", DATA, ttft_get) == 100.0
    without_load = {k: v for k, v in DATA.items() if k != "serving_load"}
    assert bench.as_published({"ttft_stat": "mean"}, "ttft_ms", without_load, ttft_get) == 100.0


def test_an_offline_row_with_its_prompt_count_is_asked_as_a_burst(monkeypatch) -> None:
    bench = _bench()
    asked: list[list[str]] = []
    monkeypatch.setattr(
        bench.cli, "predict", lambda args: asked.append(args) or bench.cli.Answer(data={}, refusal=None)
    )
    row = {"loop": "offline", "osl": "224", "num_prompts": "320"}
    _, how = bench.serve_load(row, ["--model", "m"])
    assert asked[-1] == ["--model", "m", "--num-prompts", "320"] and "burst" in how
    _, how = bench.serve_load({**row, "num_prompts": ""}, ["--model", "m"])
    assert "--num-prompts" not in asked[-1] and "--requests-per-s" in asked[-1]


def test_a_closed_row_with_its_prompt_count_is_asked_as_that_run(monkeypatch) -> None:
    """A closed loop that states N prompts (`vllm bench serve --max-concurrency C --num-prompts N`) is asked
    as that run, every request counted; one that does not, as the steady state."""
    bench = _bench()
    asked: list[list[str]] = []
    monkeypatch.setattr(
        bench.cli, "predict", lambda args: asked.append(args) or bench.cli.Answer(data={}, refusal=None)
    )
    row = {"loop": "closed", "osl": "256", "concurrency": "64", "num_prompts": "100"}
    _, how = bench.serve_load(row, ["--model", "m"])
    assert asked[-1] == ["--model", "m", "--concurrency", "64", "--num-prompts", "100"], asked[-1]
    assert "every request counted" in how
    _, how = bench.serve_load({**row, "num_prompts": ""}, ["--model", "m"])
    assert asked[-1] == ["--model", "m", "--concurrency", "64"] and how == "--concurrency"


def test_an_open_row_with_its_prompt_count_is_asked_as_that_finite_run(monkeypatch) -> None:
    """An open loop that states N prompts (`vllm bench serve --request-rate R --num-prompts N`) is asked as
    that run, its drain included; one that does not, as the steady state at the rate."""
    bench = _bench()
    asked: list[list[str]] = []
    monkeypatch.setattr(
        bench.cli, "predict", lambda args: asked.append(args) or bench.cli.Answer(data={}, refusal=None)
    )
    row = {"loop": "open", "osl": "202", "request_rate": "16", "num_prompts": "200"}
    _, how = bench.serve_load(row, ["--model", "m"])
    assert asked[-1] == ["--model", "m", "--requests-per-s", "16", "--num-prompts", "200"]
    assert "finite run" in how
    _, how = bench.serve_load({**row, "num_prompts": ""}, ["--model", "m"])
    assert asked[-1] == ["--model", "m", "--requests-per-s", "16"] and how == "--requests-per-s"


def test_a_sharegpt_row_is_asked_with_its_lengths_spread_unless_the_harness_held_them() -> None:
    """A row whose run sent ShareGPT conversations with their own lengths is asked with --request-lengths
    sharegpt, in both modes (a workload fact); one whose harness held the lengths, or that names no ShareGPT
    set, with the stated lengths."""
    bench = _bench()
    row = {"model": "mistral-7b", "gpu": "h100-sxm", "count": "1", "isl": "230", "osl": "224"}
    spread = {**row, "dataset": "ShareGPT_V3_unfiltered_cleaned_split"}
    held = {**row, "dataset": "ShareGPT_V3 prompts filtered to the input length"}
    for mode in ("stated", "typed"):
        args = bench.serving_base(spread, mode)
        assert args[args.index("--request-lengths") + 1] == "sharegpt"
        assert "--request-lengths" not in bench.serving_base(held, mode)
        assert "--request-lengths" not in bench.serving_base({**row, "dataset": "random"}, mode)
