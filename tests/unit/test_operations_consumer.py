"""Workstation and consumer GPUs: their measured square GEMM sweeps level their datacenter peer's curve (not
the peer's achieved/peak ratio, which a card with another power limit and clock does not share), their
measured copy bandwidth answers for them, and a card without rows says whose rate it was scaled from."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from advisor.catalog import operations as ops
from advisor.catalog.loader import load_knowledge
from advisor.catalog.operations import rates, tables

ROOT = Path(__file__).resolve().parents[2] / "knowledge" / "operations"
GPUS = {g.id: g for g in load_knowledge().gpus}


def _rows(name: str, gpu: str) -> list[dict[str, str]]:
    with (ROOT / f"{name}.csv").open(encoding="utf-8", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["gpu"] == gpu]


@pytest.mark.parametrize("gpu, peer", [("rtx-4090", "l40s"), ("a40", "a100-80gb-sxm")])
def test_a_cards_square_sweep_levels_its_peers_curve(gpu: str, peer: str) -> None:
    rows = [r for r in _rows("gemm", gpu) if r["dtype"] == "bf16"]
    assert len(rows) == 5 and all(r["m"] == r["n"] == r["k"] for r in rows)  # one slanted line: no grid
    assert tables._grids("gemm", (gpu, "bf16"), None)[0] is None
    got = ops.gemm_tflops(gpu, "bf16", 4096, 4096, 4096)
    assert got.basis == f"scaled from {peer}, levelled on 5 measured {gpu} rows"
    assert "torch-performance-test-data" in got.source
    # The level is the median of each row over the peer-scaled curve at its shape, capped at the peak.
    route = rates._gemm_route(gpu, "bf16", None)
    curve = rates._apply(route, GPUS[gpu], "gemm", rates._gemm_own(None, (4096.0,) * 3))
    level, count, _, _ = rates._level(gpu, "bf16", None, None)
    assert count == 5
    peak = ops.peak_tflops(GPUS[gpu], "bf16")
    assert got.value == pytest.approx(min(curve.value * level, peak))


def test_the_rtx_4090_sustains_more_of_its_peak_than_the_power_limited_l40s() -> None:
    # L40S (350 W) reaches 70% of its peak at 4096^3; the 450 W RTX 4090's own sweep 92% (151.5 of 165.2).
    def share(gpu: str) -> float:
        return ops.gemm_tflops(gpu, "bf16", 4096, 4096, 4096).value / ops.peak_tflops(GPUS[gpu], "bf16")

    l40s, rtx = share("l40s"), share("rtx-4090")
    assert l40s < 0.75 < 0.9 < rtx <= 1.0


@pytest.mark.parametrize("gpu", ["rtx-4090", "rtx-3090", "a10", "l4"])
def test_a_cards_measured_copy_bandwidth_answers_for_it(gpu: str) -> None:
    (row,) = _rows("memory", gpu)
    got = ops.memory_gbs(gpu)
    assert got.basis == "measured" and got.value == pytest.approx(float(row["gbs"]))
    assert got.value < GPUS[gpu].memory_bw_gbs  # below the datasheet


@pytest.mark.parametrize("gpu, peer", [("rtx-a6000", "a100-80gb-sxm"), ("rtx-6000-ada", "l40s")])
def test_a_card_without_rows_names_whose_rate_it_is_scaled_from(gpu: str, peer: str) -> None:
    got = ops.gemm_tflops(gpu, "bf16", 4096, 4096, 4096)
    assert got.basis == f"scaled from {peer}"
    assert got.spread >= ops.SCALED_SPREAD


def test_the_rtx_3090_answers_its_cited_cublas_gemm_at_the_measured_shape() -> None:
    # KnowingNothing/MatmulTutorial examples/matmul/cublas/call_cublas.cu: cublasGemmEx fp16 with FP32
    # compute, M = N = 5376, K = 2048, 10 warm-up then 200 event-timed calls: 1.80772 ms, 65.49 TFLOP/s.
    (row,) = _rows("gemm", "rtx-3090")
    assert (row["dtype"], row["m"], row["n"], row["k"]) == ("fp16", "5376", "5376", "2048")
    assert row["source"].startswith("KnowingNothing/MatmulTutorial@") and row["measured_on"] == "2023-05-22"
    assert float(row["tflops"]) == pytest.approx(2 * 5376 * 5376 * 2048 / 1.80772e-3 / 1e12, abs=0.01)
    for dtype in ("fp16", "bf16"):  # one GA102 tensor rate with FP32 accumulate (71 TFLOP/s) for both
        got = ops.gemm_tflops("rtx-3090", dtype, 5376, 5376, 2048)
        assert got.value == pytest.approx(65.49, rel=1e-3)
        assert got.basis.startswith("scaled from a100-80gb-sxm")
        assert "levelled on 1 measured rtx-3090" in got.basis
        assert "MatmulTutorial" in got.source
    # The level is the GeForce card's own: above A100 SXM's achieved/peak at a large square, under the peak.
    big = ops.gemm_tflops("rtx-3090", "bf16", *(8192,) * 3).value / ops.peak_tflops(GPUS["rtx-3090"], "bf16")
    a100 = ops.gemm_tflops("a100-80gb-sxm", "bf16", 8192, 8192, 8192).value
    assert a100 / ops.peak_tflops(GPUS["a100-80gb-sxm"], "bf16") < big <= 1.0
