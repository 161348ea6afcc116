"""The datasheet fallback of a GPU without measured rows takes its own vendor's achieved/peak ratio (AMD's
best matmul reaches far less of its datasheet than NVIDIA's), says so in its basis, and widens where it must
reach across vendors; the measured xGMI all-reduce sweep."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from advisor.catalog import operations as ops
from advisor.catalog.loader import load_knowledge
from advisor.catalog.operations import rates, tables

ROOT = Path(__file__).resolve().parents[2] / "knowledge" / "operations"
GPUS = {g.id: g for g in load_knowledge().gpus}
SHAPE = (8192, 8192, 8192)


def _raw(name: str) -> list[dict[str, str]]:
    with (ROOT / f"{name}.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _best_16bit_ratio(gpu: str) -> float:
    """A GPU's best measured bf16 (else fp16) GEMM row over its datasheet peak, read from the CSV itself."""
    rows = [r for r in _raw("gemm") if r["gpu"] == gpu]
    for dtype in ("bf16", "fp16"):
        values = [float(r["tflops"]) for r in rows if r["dtype"] == dtype]
        if values:
            return max(values) / ops.peak_tflops(GPUS[gpu], dtype)
    raise AssertionError(f"{gpu} has no 16-bit GEMM row")


def _derate_from_rows(vendor: str, architecture: str) -> float:
    gpus = sorted({r["gpu"] for r in _raw("gemm")})
    kin = [g for g in gpus if GPUS[g].vendor == vendor and GPUS[g].architecture == architecture]
    kin = kin or [g for g in gpus if GPUS[g].vendor == vendor]
    others = [g for g in gpus if GPUS[g].vendor != vendor]
    return statistics.median(map(_best_16bit_ratio, kin)) / statistics.median(map(_best_16bit_ratio, others))


def test_the_amd_matmul_derate_is_its_measured_best_shapes_against_the_other_vendors() -> None:
    factor, named = rates.vendor_derate(GPUS["mi250x"])
    # CDNA2 has no GEMM row: the vendor's measured CDNA3 rows stand in, and are named.
    assert factor == pytest.approx(_derate_from_rows("amd", "cdna2"))
    assert set(named.split(", ")) == {"mi300x", "mi325x"}
    # MI300X's best bf16 matmul reaches ~0.5 of its datasheet peak, NVIDIA's ~0.8: a derate well below 1.
    assert 0.5 < factor < 0.85


def test_a_gpu_whose_vendor_has_no_gemm_grid_takes_the_derate_and_a_wider_interval() -> None:
    got = ops.gemm_tflops("mi250x", "bf16", *SHAPE)
    assert got.basis.startswith("datasheet fallback") and "amd matmul derate" in got.basis
    assert "mi300x" in got.basis and "mi325x" in got.basis
    assert got.spread >= ops.FALLBACK_SPREAD + rates.CROSS_VENDOR_SPREAD
    # The other vendors' median ratio at this shape (their grids), times the derate, times this GPU's peak.
    nvidia = [
        ops.gemm_tflops(g, "bf16", *SHAPE).value / ops.peak_tflops(GPUS[g], "bf16")
        for g in sorted({r["gpu"] for r in _raw("gemm")})
        if GPUS[g].vendor == "nvidia"
        and ops.gemm_tflops(g, "bf16", *SHAPE).basis in ("measured", "interpolated", "extrapolated")
    ]
    expected = statistics.median(nvidia) * _derate_from_rows("amd", "cdna2") * 383.0
    assert got.value == pytest.approx(expected, rel=1e-6)


def test_a_gpus_bf16_row_levels_its_fp8_curve_too() -> None:
    # MI300X has no fp8 row: its one bf16 MAMF row levels the fp8 fallback curve by the same measured
    # factor (a chip's clocks and power limit), rather than leaving fp8 at the other vendors' level.
    gpu = GPUS["mi300x"]
    row = next(r for r in _raw("gemm") if r["gpu"] == "mi300x" and r["dtype"] == "bf16")
    shape = (int(row["m"]), int(row["n"]), int(row["k"]))
    q = tuple(float(x) for x in shape)
    fp8 = ops.gemm_tflops("mi300x", "fp8", *shape)
    assert fp8.basis.endswith("levelled on 1 measured mi300x bf16 row")
    factor, count, _, dtype = rates._level("mi300x", "fp8", None, None)
    assert (count, dtype) == (1, "bf16")
    bf16_curve = rates._apply(
        rates._gemm_route("mi300x", "bf16", None), gpu, "gemm", rates._gemm_own(None, q)
    )
    assert factor == pytest.approx(float(row["tflops"]) / bf16_curve.value)
    fp8_curve = rates._apply(rates._gemm_route("mi300x", "fp8", None), gpu, "gemm", rates._gemm_own(None, q))
    assert fp8.value == pytest.approx(fp8_curve.value * factor)


def test_a_square_sweep_levels_a_curve_rather_than_forming_a_grid() -> None:
    # MI325X's five square shapes (m = n = k) lie on one slanted line of the (m, n, k) grid: filling the
    # grid from them would price a decode GEMM (m = 16) at a square GEMM's time. They level the curve.
    assert tables._grids("gemm", ("mi325x", "bf16"), None)[0] is None
    got = ops.gemm_tflops("mi325x", "bf16", *SHAPE)
    assert got.basis.endswith("levelled on 6 measured mi325x rows") and "HipKittens" in got.source
    # The measured 1024^3 point's time held down to m = 16 would give 79.1 x 16/1024 = 1.2 TFLOP/s.
    assert ops.gemm_tflops("mi325x", "bf16", 16, 1024, 1024).value > 5 * 79.1 * 16 / 1024


@pytest.mark.parametrize(
    "points, slanted",
    [
        ([(1024.0, 1024.0, 1024.0), (2048.0, 2048.0, 2048.0), (4096.0, 4096.0, 4096.0)], True),
        ([(1.0, 4096.0, 4096.0), (16.0, 4096.0, 4096.0), (256.0, 4096.0, 4096.0)], False),
        ([(1.0, 1024.0, 1024.0), (16.0, 2048.0, 1024.0), (256.0, 1024.0, 4096.0)], False),
    ],
)
def test_one_slanted_line(points: list[tuple[float, ...]], slanted: bool) -> None:
    assert tables._one_slanted_line(points) is slanted


def test_attention_on_an_amd_gpu_without_rows_is_derated_from_the_nvidia_ratio() -> None:
    # MI250X (CDNA2): no attention row, no CDNA2 peer with one: NVIDIA's ratio x AMD's matmul derate.
    shape = {"seq_len": 8192, "heads": 32, "kv_heads": 8, "head_dim": 128, "causal": True, "pass_": "fwd"}
    amd = ops.attention_tflops("mi250x", "bf16", **shape)
    assert "amd matmul derate" in amd.basis and amd.spread >= ops.FALLBACK_SPREAD + rates.CROSS_VENDOR_SPREAD
    nvidia = sorted({r["gpu"] for r in _raw("attention") if GPUS[r["gpu"]].vendor == "nvidia"})
    ratios = [
        ops.attention_tflops(g, "bf16", **shape).value / ops.peak_tflops(GPUS[g], "bf16") for g in nvidia
    ]
    factor, _ = rates.vendor_derate(GPUS["mi250x"])
    peak = ops.peak_tflops(GPUS["mi250x"], "bf16")
    assert amd.value == pytest.approx(statistics.median(ratios) * factor * peak, rel=1e-6)
    # A CDNA attention answer below what the same datasheet peak would get at NVIDIA's ratio.
    assert amd.value < statistics.median(ratios) * peak


def test_mi300x_attention_answers_its_measured_flashattention_rows() -> None:
    # ROCm/flash-attention issue #142: benchmark_flash_attention.py on MI300X (CK backend, fp16, 16 heads of
    # head_dim 128, non-causal, seqlen 16384, batch 1): forward 353.22, backward 194.43 TFLOP/s.
    shape = {"seq_len": 16384, "heads": 16, "kv_heads": 16, "head_dim": 128, "causal": False, "batch": 1}
    fwd = ops.attention_tflops("mi300x", "fp16", **shape, pass_="fwd")
    bwd = ops.attention_tflops("mi300x", "fp16", **shape, pass_="bwd")
    assert (fwd.value, fwd.basis) == (pytest.approx(353.22), "measured")
    assert (bwd.value, bwd.basis) == (pytest.approx(194.43), "measured")
    assert "ROCm/flash-attention/issues/142" in bwd.source
    # bf16 runs at the same datasheet rate; the sister CDNA3 MI325X is scaled from these rows, not derated.
    for gpu in ("mi300x", "mi325x"):
        got = ops.attention_tflops(gpu, "bf16", **shape, pass_="bwd")
        assert got.value == pytest.approx(194.43 * ops.peak_tflops(GPUS[gpu], "bf16") / 1307.4, rel=1e-6)
        assert "mi300x fp16" in got.basis and "derate" not in got.basis
    # The backward pass is the slow one on CDNA3: about half the forward's rate (H100's FA2: 0.69-0.86).
    assert bwd.value / fwd.value < 0.6


def test_a_gpu_whose_vendor_has_rows_takes_the_vendors_ratio() -> None:
    # MI250X has no memory row; MI300X (the only AMD GPU with one) gives the ratio, named in the basis.
    got = ops.memory_gbs("mi250x")
    assert got.basis == "datasheet fallback (amd ratio: mi300x)"
    mi300x = ops.memory_gbs("mi300x").value / GPUS["mi300x"].memory_bw_gbs
    assert got.value == pytest.approx(mi300x * GPUS["mi250x"].memory_bw_gbs)
    assert got.spread == pytest.approx(ops.FALLBACK_SPREAD)


def test_an_nvidia_fallback_takes_only_nvidia_ratios_and_is_not_widened() -> None:
    got = ops.gemm_tflops("t4", "fp16", *SHAPE)
    assert got.basis.startswith("datasheet fallback (nvidia ratio")
    assert "derate" not in got.basis
    assert got.spread < ops.FALLBACK_SPREAD + rates.CROSS_VENDOR_SPREAD
    # An NVIDIA memory fallback (none is needed today: every NVIDIA architecture has a measured copy or read
    # row) leaves MI300X's (lower) ratio out of its median.
    median = rates._family_median(GPUS["l4"], "memory", _memory_own, rates._peak_of("memory bandwidth"))
    assert "nvidia ratio" in median.note and "amd" not in median.whose and "mi300x" not in median.note


def _memory_own(gpu_id: str) -> ops.Measured | None:
    """A GPU's own memory rows at a large buffer, as memory_gbs reads them."""
    for op in rates.MEMORY_OPS:
        grid, origin = tables._grids("memory", (gpu_id, op), None)
        if grid is not None:
            return tables._measured(grid, origin, (grid.axes[0][-1],))
    return None


def test_the_measured_xgmi_all_reduce_sweep_is_latency_bound_at_small_sizes() -> None:
    small = ops.collective_busbw_gbs("all_reduce", "xgmi", 8, 1, float(1 << 20))
    large = ops.collective_busbw_gbs("all_reduce", "xgmi", 8, 1, float(1 << 30))
    assert small.basis == "measured" and large.basis == "measured"
    assert small.value < 0.3 * large.value  # 64.6 against 313.7 GB/s in the rccl-tests sweep
    assert large.value <= 448 * 2 * 7 / 8  # the bus-bandwidth bound on xGMI's nominal per-GPU rate


def test_a_family_median_read_from_the_shared_ratios_equals_one_worked_out_alone() -> None:
    # Every measured GPU's ratio at a query is worked out once and shared by the datasheet fallbacks of every
    # vendor and architecture that ask it: each must get what it gets when it asks first, alone.
    def answer(gpu: str) -> tuple[float, str, str, float]:
        got = ops.gemm_tflops(gpu, "bf16", *SHAPE)
        return got.value, got.source, got.basis, got.spread

    ops.clear_cache()
    fallbacks = [g for g in GPUS if rates._gemm_route(g, "bf16", None).grid is None]
    assert len({(GPUS[g].vendor, GPUS[g].architecture) for g in fallbacks}) >= 2, fallbacks
    together = [answer(g) for g in fallbacks]
    assert rates._RATIOS
    alone = []
    for g in fallbacks:
        ops.clear_cache()
        alone.append(answer(g))
    assert together == alone
