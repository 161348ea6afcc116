"""The sealed eleventh set, serving half (docs/heldout.md, "The sealed eleventh set (heldout11)").

Its origins appear nowhere in knowledge/ or sets 1-10, its source ids are new, no origin holds more than a
quarter of the rows, and it keeps what it was built to judge: TPOT with one request in flight on datacenter
GPUs, open-loop rate sweeps, a static batch sweep from batch 1, a closed-loop concurrency sweep with TTFT,
dense and MoE models on several GPUs. The floors are what the set holds, so that a lost row fails.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.unit.test_heldout_runs import (
    ROOT,
    SERVING10,
    SETS_1_TO_9,
    TRAINING10,
    _assert_sealed,
    _rows,
    batch_one_tpot,
    catalogue,  # noqa: F401 - the shared fixture, used by test_heldout11_serving_rows_parse
    sweeps,
)
from tests.unit.test_heldout_runs import test_serving_rows_parse as _parse_serving

SERVING11 = ROOT / "benchmarks" / "heldout11_serving_runs.csv"
SETS_1_TO_10: list[Path] = [*SETS_1_TO_9, TRAINING10, SERVING10]
# What the serving half holds (docs/heldout.md): 32 rows from 7 origins, no origin above a quarter of them
# (heldout11s built 24 rows from 6 origins; heldout11t added 8 closed-loop rows from a seventh).
MIN_ROWS, MIN_ORIGINS, MAX_ORIGIN_SHARE = 32, 7, 0.25
MIN_STATIC, MIN_OPEN, MIN_CLOSED, MIN_OFFLINE = 12, 10, 9, 1
# Closed-loop rows that carry a TTFT, and the points of the one closed-loop concurrency sweep.
MIN_CLOSED_TTFT, MIN_SWEEP_POINTS = 8, 6
# TPOT with one request in flight (static batch 1 or concurrency 1) on datacenter GPUs, from two origins.
MIN_BATCH_ONE_TPOT = 3
DATACENTER_GPUS = {"a100-80gb-sxm", "h100-sxm", "h100-pcie", "h200", "b200", "mi300x", "l40s"}
MOE = {"mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return _rows(SERVING11)


def test_heldout11_serving_rows_parse(catalogue: dict[str, set[str]]) -> None:  # noqa: F811
    """Every set's checks, then: each row names a catalogue engine."""
    _parse_serving(catalogue, SERVING11)
    for row in _rows(SERVING11):
        assert row["engine"] in catalogue["engines"], f"row {row['id']}: engine {row['engine']!r}"


def test_heldout11_serving_sources_appear_nowhere_else(rows: list[dict[str, str]]) -> None:
    """Sealed against knowledge/, external_validation.csv and sets 1-10 (rerun by the lead on the merged tree,
    where it catches a branch that put a heldout11 source into knowledge/)."""
    _assert_sealed(rows, SETS_1_TO_10, MIN_ORIGINS, "heldout11 serving")


def test_heldout11_serving_source_ids_are_new(rows: list[dict[str, str]]) -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_10 for r in _rows(path)}
    eleventh = {r["source_id"] for r in rows}
    assert not earlier & eleventh, f"source ids shared with an earlier set: {sorted(earlier & eleventh)}"
    assert all(r["family"] != "mlperf" for r in rows), "an MLPerf row in the eleventh set"


def test_heldout11_serving_no_origin_dominates(rows: list[dict[str, str]]) -> None:
    """The tenth set's shortfall: one origin held 16 of 45 rows. Here none holds more than a quarter."""
    counts = Counter(r["source_id"] for r in rows)
    biggest, n = counts.most_common(1)[0]
    assert n <= MAX_ORIGIN_SHARE * len(rows), f"{biggest} holds {n} of {len(rows)} rows"


def test_heldout11_serving_is_wide_enough_to_judge(rows: list[dict[str, str]]) -> None:
    assert len(rows) >= MIN_ROWS, f"{len(rows)} serving rows in heldout11"
    loops = Counter(r["loop"] for r in rows)
    assert loops["static"] >= MIN_STATIC, "too few static-batch rows"
    assert loops["open"] >= MIN_OPEN, "too few open-loop rows"
    assert loops["closed"] >= MIN_CLOSED, "too few closed-loop rows"
    closed_ttft = [r for r in rows if r["loop"] == "closed" and r["ttft_ms"]]
    assert len(closed_ttft) >= MIN_CLOSED_TTFT, f"{len(closed_ttft)} closed-loop rows with a TTFT"
    assert loops["offline"] >= MIN_OFFLINE, "no offline row"
    assert {r["engine"] for r in rows} >= {"vllm", "sglang"}, "fewer than two engines"
    assert len({r["gpu"] for r in rows}) >= 3, "fewer than three GPU kinds"
    models = {r["model"] for r in rows}
    assert models & MOE and models - MOE, "not dense and MoE"


def test_heldout11_serving_has_tpot_at_one_request_on_datacenter_gpus(rows: list[dict[str, str]]) -> None:
    single = batch_one_tpot(rows, DATACENTER_GPUS)
    assert len(single) >= MIN_BATCH_ONE_TPOT, f"{len(single)} TPOT rows at one request in flight"
    assert len({r["source_id"] for r in single}) >= 2, "batch-one TPOT rows from one source only"


def test_heldout11_one_source_varies_only_the_request_rate(rows: list[dict[str, str]]) -> None:
    """The latency-vs-load curve: one source, engine, model, GPU count and lengths at four or more rates."""
    rates = sweeps(rows, "open", "request_rate")
    assert any(len(r) >= 4 for r in rates), "no open-loop sweep of four rates or more"


def test_heldout11_one_source_varies_only_the_static_batch(rows: list[dict[str, str]]) -> None:
    batches = sweeps(rows, "static", "batch")
    assert any(len(b) >= 4 and "1" in b for b in batches), "no static batch sweep from batch 1"


def test_heldout11_one_source_varies_only_the_concurrency(rows: list[dict[str, str]]) -> None:
    """The TTFT-vs-load curve in closed loop: one source, engine, model, GPU count and lengths at several
    concurrencies, each with a TTFT."""
    widest = max((len(c) for c in sweeps(rows, "closed", "concurrency", ttft=True)), default=0)
    assert widest >= MIN_SWEEP_POINTS, f"the widest closed-loop TTFT sweep has {widest} concurrencies"
