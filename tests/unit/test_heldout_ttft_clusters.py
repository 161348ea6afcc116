"""bench_heldout --ttft-clusters groups the TTFT rows as published by loop, engine and load band, and by GPU
(docs/serving.md, Stop 43 (ttft44)): a row lands in the band its stated load gives, an offline burst is heavy,
a row without an engine is the tool's pick, and only rows that state a TTFT are scored."""

from __future__ import annotations

from tests.unit.bench_scripts import bench_script


def _bench():
    return bench_script("bench_heldout")


def _row(rid: str, loop: str, engine: str, gpu: str, ttft: str, **load: str) -> dict[str, str]:
    base = {"concurrency": "", "batch": "", "request_rate": ""}
    return {"id": rid, "source_id": "s", "family": "f", "loop": loop, "engine": engine, "gpu": gpu,
            "ttft_ms": ttft, "ttft_stat": "median", **base, **load}  # fmt: skip


def test_load_bands() -> None:
    bench = _bench()
    assert bench.load_band(_row("a", "closed", "vllm", "h100", "1", concurrency="1")) == "one"
    assert bench.load_band(_row("a", "open", "vllm", "h100", "1", request_rate="0.5")) == "one"
    assert bench.load_band(_row("a", "closed", "vllm", "h100", "1", concurrency="16")) == "light"
    assert bench.load_band(_row("a", "static", "", "h100", "1", batch="8")) == "light"
    assert bench.load_band(_row("a", "closed", "vllm", "h100", "1", concurrency="64")) == "heavy"
    assert bench.load_band(_row("a", "offline", "vllm", "h100", "1", request_rate="1")) == "heavy"
    assert bench.load_band(_row("a", "open", "vllm", "h100", "1", request_rate="inf")) == "heavy"


def test_clusters_score_the_stated_ttft_rows_by_group() -> None:
    bench = _bench()

    def answered(row: dict[str, str], ttft: float, mode: str = "stated"):
        data = {"serving_ttft_ms": {"p50": ttft}}
        return bench.ServeResult(row, mode, bench.cli.Answer(data=data, refusal=None), "")

    results = [
        answered(_row("a", "closed", "vllm", "h100", "100", concurrency="1"), 200.0),
        answered(_row("b", "closed", "vllm", "l4", "100", concurrency="1"), 50.0),
        answered(_row("c", "closed", "vllm", "l4", "100", concurrency="128"), 25.0),
        answered(_row("d", "static", "", "l4", "100", batch="1"), 100.0),
        answered(_row("e", "closed", "vllm", "l4", "", concurrency="1"), 1.0),  # no TTFT: not scored
        # as typed: not scored
        answered(_row("a", "closed", "vllm", "h100", "100", concurrency="1"), 1.0, "typed"),
    ]
    got = dict(bench.ttft_clusters(results))
    assert set(got) == {"closed vllm one", "closed vllm heavy", "static tool one", "gpu h100", "gpu l4"}
    assert sorted(s.predicted / s.measured for s in got["closed vllm one"]) == [0.5, 2.0]
    assert [s.row_id for s in got["closed vllm heavy"]] == ["c"]
    assert [s.row_id for s in got["gpu l4"]] == ["b", "c", "d"]
    assert [s.predicted for s in got["gpu h100"]] == [200.0]
