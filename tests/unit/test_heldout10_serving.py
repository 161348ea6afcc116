"""The sealed tenth set, serving half (docs/heldout.md, "The sealed tenth set (heldout10), serving half").

Its origins appear nowhere in knowledge/ or sets 1-9, its source ids are new, and it keeps what it was built
to judge: TTFT under a stated load (open and closed loop), offline and static-batch throughput, dense and MoE
models on several GPUs. The floors are what the set holds, so that a lost row fails. Its rows are parsed with
every set's, in test_heldout_runs.py.
"""

from __future__ import annotations

import pytest

from tests.unit.test_heldout_runs import (
    SERVING10,
    SETS_1_TO_9,
    _assert_sealed,
    _rows,
    batch_one_tpot,
    sweeps,
)

# What the serving half holds (docs/heldout.md): 45 rows from 10 origins in 3 families (heldout10s built 23
# rows from 6 origins; heldout10t added 22 from 4).
MIN_ROWS, MIN_ORIGINS = 45, 10
MIN_LOADED_TTFT, MIN_OPEN_LOOP_TTFT, MIN_CLOSED_LOOP_TTFT = 19, 18, 1
MIN_OFFLINE, MIN_STATIC = 2, 24
# TPOT with one request in flight (static batch 1 or concurrency 1) on datacenter GPUs.
MIN_BATCH_ONE_TPOT = 3
DATACENTER_GPUS = {"a100-40gb-sxm", "a100-80gb-sxm", "h100-sxm", "h100-pcie", "h200", "b200", "gb200"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return _rows(SERVING10)


def test_heldout10_serving_sources_appear_nowhere_else(rows: list[dict[str, str]]) -> None:
    """Sealed against knowledge/, external_validation.csv and sets 1-9 (rerun by the lead on the merged tree,
    where it catches a branch that put a heldout10 source into knowledge/)."""
    _assert_sealed(rows, SETS_1_TO_9, MIN_ORIGINS, "heldout10 serving")


def test_heldout10_serving_source_ids_are_new(rows: list[dict[str, str]]) -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_9 for r in _rows(path)}
    tenth = {r["source_id"] for r in rows}
    assert not earlier & tenth, f"source ids shared with an earlier set: {sorted(earlier & tenth)}"
    assert all(r["family"] != "mlperf" for r in rows), "an MLPerf row in the tenth set"


def _loaded_ttft(rows: list[dict[str, str]], loop: str) -> list[dict[str, str]]:
    return [r for r in rows if r["loop"] == loop and r["ttft_ms"]]


def test_heldout10_serving_is_wide_enough_to_judge(rows: list[dict[str, str]]) -> None:
    assert len(rows) >= MIN_ROWS, f"{len(rows)} serving rows in heldout10"
    loaded = [r for r in rows if r["ttft_ms"] and (r["request_rate"] or r["concurrency"] not in ("", "1"))]
    assert len(loaded) >= MIN_LOADED_TTFT, f"{len(loaded)} TTFT rows under a stated load"
    assert len(_loaded_ttft(rows, "open")) >= MIN_OPEN_LOOP_TTFT, "too few open-loop TTFT rows"
    assert len(_loaded_ttft(rows, "closed")) >= MIN_CLOSED_LOOP_TTFT, "no closed-loop TTFT row"
    assert sum(r["loop"] == "offline" for r in rows) >= MIN_OFFLINE, "too few offline rows"
    assert sum(r["loop"] == "static" for r in rows) >= MIN_STATIC, "too few static-batch rows"
    assert {r["engine"] for r in rows} >= {"vllm", "sglang", "trtllm"}, "fewer than three engines"
    assert len({r["gpu"] for r in rows}) >= 4, "fewer than four GPU kinds"
    moe = {"deepseek-v3", "qwen3-30b-a3b", "mixtral-8x7b", "mixtral-8x22b"}
    assert any(r["model"] in moe for r in rows) and any(r["model"] not in moe for r in rows), (
        "not dense and MoE"
    )


def test_heldout10_one_source_varies_only_the_offered_load(rows: list[dict[str, str]]) -> None:
    """The TTFT-vs-load curve: one source runs one engine, model, lengths and rate at 50 and 200 requests."""
    keys: dict[tuple[str, ...], set[str]] = {}
    for r in rows:
        if r["loop"] == "open" and r["ttft_ms"]:
            key = (r["source_id"], r["engine"], r["model"], r["isl"], r["osl"], r["request_rate"])
            keys.setdefault(key, set()).add(r["num_prompts"])
    assert any(len(n) >= 2 for n in keys.values()), "no open-loop run repeated at another request count"


def test_heldout10_serving_has_tpot_at_one_request_on_datacenter_gpus(rows: list[dict[str, str]]) -> None:
    single = batch_one_tpot(rows, DATACENTER_GPUS)
    assert len(single) >= MIN_BATCH_ONE_TPOT, f"{len(single)} TPOT rows at one request in flight"
    assert len({r["source_id"] for r in single}) >= 2, "batch-one TPOT rows from one source only"


def test_heldout10_one_source_varies_only_the_static_batch(rows: list[dict[str, str]]) -> None:
    """The throughput-vs-batch curve: one source, one engine, model, GPU count and lengths at >= 4 batches."""
    batches = sweeps(rows, "static", "batch")
    assert any(len(b) >= 4 and "1" in b for b in batches), "no static batch sweep from batch 1"
