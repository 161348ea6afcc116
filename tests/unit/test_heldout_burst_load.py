"""bench_heldout asks an offline row that states its prompt count as that burst (--num-prompts N, every prompt
at t=0, as `vllm bench serve --request-rate inf --num-prompts N` runs), and one that does not as before."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _bench():
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("bench_heldout")
    finally:
        sys.path.remove(str(BENCH))


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
