"""The measured-operation tables (knowledge/operations/*.csv) and their loader: interpolation, extrapolation,
fallbacks for every catalogued GPU, sources on every row, physical bounds, profile precedence."""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.catalog import operations as ops
from advisor.catalog.loader import load_knowledge
from advisor.catalog.operations import rates, tables
from advisor.question.errors import InputError

ROOT = Path(__file__).resolve().parents[2] / "knowledge" / "operations"
HEADERS = {
    "gemm": "gpu,dtype,m,n,k,tflops,source,measured_on,note",
    "attention": "gpu,dtype,kernel,pass,causal,batch,seq_len,heads,kv_heads,head_dim,tflops,"
    "source,measured_on,note",
    "memory": "gpu,op,nbytes,gbs,source,measured_on,note",
    "collectives": "op,link,gpus,nodes,nbytes,busbw_gbs,source,measured_on,note",
}
GPUS = {g.id: g for g in load_knowledge().gpus}


@pytest.fixture
def fresh() -> Iterator[None]:
    """Memoised answers forgotten before and after (a test that swaps the profile under one name)."""
    ops.clear_cache()
    yield
    ops.clear_cache()


def _raw(name: str) -> list[dict[str, str]]:
    with (ROOT / f"{name}.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


# --- the files ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(HEADERS))
def test_header_source_and_date_on_every_row(name: str) -> None:
    header = (ROOT / f"{name}.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == HEADERS[name]
    rows = _raw(name)
    assert rows
    for row in rows:
        assert row["source"].strip(), row
        assert row["measured_on"] == "" or len(row["measured_on"]) in (7, 10), row
        if "gpu" in row:
            assert row["gpu"] in GPUS, row["gpu"]


def test_tables_stay_small() -> None:
    assert sum(p.stat().st_size for p in ROOT.iterdir()) < 2_000_000


def test_no_gemm_above_the_datasheet_peak() -> None:
    for row in _raw("gemm") + _raw("attention"):
        peak = ops.peak_tflops(GPUS[row["gpu"]], row["dtype"])
        assert peak is not None, row
        assert 0 < float(row["tflops"]) <= peak, row


def test_no_memory_bandwidth_above_the_datasheet() -> None:
    for row in _raw("memory"):
        assert 0 < float(row["gbs"]) <= GPUS[row["gpu"]].memory_bw_gbs, row


def test_no_busbw_above_the_links_nominal_bandwidth() -> None:
    for row in _raw("collectives"):
        nominal = ops.nominal_gbs(row["link"])
        assert nominal is not None, row["link"]
        n, k = int(row["gpus"]), int(row["nodes"])
        bound = nominal
        if k > 1:
            # Between servers NCCL reduces inside each server first: each GPU's NIC carries 2(k-1)/k of a
            # 1/g share, so busbw can reach g (n-1)/n k/(k-1) times one NIC's rate (g GPUs a server).
            bound = nominal * (n // k) * (n - 1) / n * k / (k - 1)
        elif row["op"] == "all_reduce" and row["link"].startswith("nvlink"):
            # NVLink SHARP reduces inside the switch: an all-reduce's bus bandwidth can pass one direction's
            # link rate, up to 2(n-1)/n of it (each GPU sends its data once and receives the result once).
            bound = nominal * 2 * (n - 1) / n
        assert 0 < float(row["busbw_gbs"]) <= bound, row


# --- interpolation and extrapolation ------------------------------------------------------------------------
def _row(gpu: str, dtype: str, m: int, n: int, k: int) -> float:
    for r in _raw("gemm"):
        if (r["gpu"], r["dtype"], r["m"], r["n"], r["k"]) == (gpu, dtype, str(m), str(n), str(k)):
            return float(r["tflops"])
    raise AssertionError("row not found")


def test_a_measured_point_is_returned_as_measured() -> None:
    got = ops.gemm_tflops("h100-sxm", "bf16", 4096, 4096, 4096)
    assert got.basis == "measured" and got.spread == 0.0
    assert got.value == pytest.approx(_row("h100-sxm", "bf16", 4096, 4096, 4096))
    assert "aiconfigurator" in got.source


def test_interpolation_lies_between_its_neighbours_in_log_space() -> None:
    lo, hi = _row("h100-sxm", "bf16", 1024, 4096, 4096), _row("h100-sxm", "bf16", 4096, 4096, 4096)
    got = ops.gemm_tflops("h100-sxm", "bf16", 2048, 4096, 4096)
    # m = 2048 is off the shipped grid's m axis (..., 1024, 4096, ...): the geometric mean of its neighbours.
    assert got.basis == "interpolated" and got.spread == 0.0
    assert got.value == pytest.approx(math.sqrt(lo * hi))


def test_beyond_the_grid_is_extrapolated_with_a_spread_growing_with_distance() -> None:
    near = ops.gemm_tflops("h100-sxm", "bf16", 65536, 4096, 4096)
    far = ops.gemm_tflops("h100-sxm", "bf16", 262144, 4096, 4096)
    assert near.basis == far.basis == "extrapolated"
    assert 0 < near.spread < far.spread <= ops.MAX_SPREAD
    # Above the grid the achieved rate holds; below it the time of the smallest measured size holds.
    assert near.value == pytest.approx(_row("h100-sxm", "bf16", 32768, 4096, 4096))
    small = ops.gemm_tflops("h100-sxm", "bf16", 4096, 512, 4096)
    assert small.value == pytest.approx(_row("h100-sxm", "bf16", 4096, 1024, 4096) / 2)


def test_collectives_interpolate_over_size_and_group() -> None:
    got = ops.collective_busbw_gbs("all_reduce", "nvlink4", 8, 1, 3e8)
    assert got.basis == "interpolated"
    assert 300 < got.value <= 450 * 2 * 7 / 8
    assert ops.collective_busbw_gbs("all_reduce", "nvlink4", 8, 1, 1e4).value < got.value / 10


def test_one_gpu_moves_nothing() -> None:
    assert ops.collective_busbw_gbs("all_reduce", "nvlink4", 1, 1, 1e9).value == math.inf


# --- fallbacks ----------------------------------------------------------------------------------------------
def test_a_gpu_without_rows_is_scaled_from_a_measured_peer_of_its_architecture() -> None:
    got = ops.gemm_tflops("h100-pcie", "bf16", 4096, 4096, 4096)
    assert got.basis.startswith("scaled from ") and got.spread >= ops.SCALED_SPREAD
    peer = got.basis.removeprefix("scaled from ")
    assert GPUS[peer].architecture == "hopper"
    ratio = ops.gemm_tflops(peer, "bf16", 4096, 4096, 4096).value / ops.peak_tflops(GPUS[peer], "bf16")
    assert got.value == pytest.approx(ratio * ops.peak_tflops(GPUS["h100-pcie"], "bf16"))


def test_a_gpu_of_an_unmeasured_architecture_gets_the_datasheet_fallback() -> None:
    got = ops.gemm_tflops("t4", "fp16", 4096, 4096, 4096)
    assert got.basis.startswith("datasheet fallback") and got.spread >= ops.FALLBACK_SPREAD
    assert 0 < got.value < ops.peak_tflops(GPUS["t4"], "fp16")


def test_a_dtype_the_gpu_does_not_execute_runs_at_the_next_one() -> None:
    fp8 = ops.gemm_tflops("a100-80gb-sxm", "fp8", 4096, 4096, 4096)
    assert "not executed" in fp8.basis
    assert fp8.value == ops.gemm_tflops("a100-80gb-sxm", "bf16", 4096, 4096, 4096).value


@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_every_catalogued_gpu_gets_an_answer_for_every_table(gpu: str) -> None:
    for dtype in ops.DTYPES:
        got = ops.gemm_tflops(gpu, dtype, 4096, 4096, 4096)
        assert math.isfinite(got.value) and got.value > 0 and got.source and got.basis
    att = ops.attention_tflops(
        gpu, "bf16", seq_len=4096, heads=32, kv_heads=8, head_dim=128, causal=True, pass_="fwd"
    )
    assert att.value > 0 and att.source
    mem = ops.memory_gbs(gpu)
    assert 0 < mem.value <= GPUS[gpu].memory_bw_gbs * (1 + mem.spread)
    for across in (False, True):
        link = ops.link_key(gpu, across_nodes=across)
        bus = ops.collective_busbw_gbs("all_reduce", link, 16 if across else 2, 2 if across else 1, 1e8)
        assert bus.value > 0 and bus.source


def test_attention_reads_the_measured_forward_and_derives_the_other_passes() -> None:
    shape = {"seq_len": 8192, "heads": 32, "kv_heads": 8, "head_dim": 128, "causal": True}
    fwd = ops.attention_tflops("a100-80gb-sxm", "bf16", **shape, pass_="fwd")
    assert fwd.basis == "measured" and "aiconfigurator" in fwd.source
    bwd = ops.attention_tflops("a100-80gb-sxm", "bf16", **shape, pass_="bwd")
    assert bwd.basis == "scaled from a100-80gb-sxm fwd" and bwd.spread >= ops.SCALED_SPREAD
    both = ops.attention_tflops("a100-80gb-sxm", "bf16", **shape, pass_="fwd_bwd")
    # Times add: 3.5 forward-FLOP units over the forward's time plus the backward's (2.5 units).
    assert both.value == pytest.approx(3.5 / (1 / fwd.value + 2.5 / bwd.value))
    assert min(fwd.value, bwd.value) <= both.value <= max(fwd.value, bwd.value)


def test_attention_honours_an_asked_kernel() -> None:
    shape = {"seq_len": 4096, "heads": 16, "kv_heads": 16, "head_dim": 128, "causal": True, "batch": 4}
    fa3 = ops.attention_tflops("h100-sxm", "bf16", **shape, pass_="fwd", kernel="fa3")
    fa2 = ops.attention_tflops("h100-sxm", "bf16", **shape, pass_="fwd", kernel="fa2")
    assert fa3.basis == fa2.basis == "measured" and "FlashAttention-3" in fa3.source
    assert fa3.value > fa2.value  # the paper's own finding on H100
    # A kernel a GPU was not measured with (FlashAttention-3 needs Hopper): another kernel's rows, said so.
    a100 = ops.attention_tflops("a100-80gb-sxm", "bf16", **shape, pass_="fwd", kernel="fa3")
    assert a100.basis == "extrapolated" and a100.spread >= ops.EXTRAPOLATED_SPREAD


def test_memory_without_a_size_is_the_large_buffer_rate() -> None:
    got = ops.memory_gbs("h100-sxm")
    assert got.basis == "measured" and 0.8 < got.value / GPUS["h100-sxm"].memory_bw_gbs < 1.0
    peer = ops.memory_gbs("h200")
    assert peer.basis.startswith("scaled from ") and peer.value > got.value


def test_link_keys_of_the_catalogue() -> None:
    assert ops.link_key("h100-sxm", across_nodes=False) == "nvlink4"
    assert ops.link_key("a100-80gb-sxm", across_nodes=True) == "ib-hdr200"
    assert ops.link_key("h100-sxm", across_nodes=True, fabric="roce-200") == "roce-200"
    assert ops.link_key("gb200", across_nodes=True) == "nvlink5"  # the NVL72 domain spans trays
    assert ops.link_key("mi300x", across_nodes=False) == "xgmi"
    for g in GPUS.values():
        for across in (False, True):
            assert ops.nominal_gbs(ops.link_key(g, across_nodes=across)) is not None, g.id


def test_a_link_without_rows_is_scaled_from_its_family() -> None:
    got = ops.collective_busbw_gbs("all_reduce", "pcie3", 2, 1, 1e9)
    assert got.basis == "scaled from pcie4"
    pcie4 = ops.collective_busbw_gbs("all_reduce", "pcie4", 2, 1, 1e9)
    assert got.value == pytest.approx(pcie4.value * 15.75 / 31.5)
    across = ops.collective_busbw_gbs("all_reduce", "ib-hdr200", 16, 2, 1e9)
    assert across.basis.startswith("alpha-beta") and "scaled from roce-200" in across.basis
    assert across.spread > ops.SCALED_SPREAD


def test_an_unmeasured_op_borrows_the_nearest_ops_rows() -> None:
    got = ops.collective_busbw_gbs("send_recv", "nvlink5", 2, 1, 1e8)
    assert got.basis == "scaled from nvlink5 all_gather"


def test_no_answer_passes_the_datasheet_peak() -> None:
    rng = random.Random(26)
    for gpu in ("h100-sxm", "h100-pcie", "gh200", "mi300x", "t4", "a10", "b200"):
        g = GPUS[gpu]
        for dtype in ("bf16", "fp8", "fp32"):
            peak = ops.peak_tflops(g, rates._runnable(g, dtype))
            for _ in range(30):
                m, n, k = (2 ** rng.uniform(0, 17) for _ in range(3))
                got = ops.gemm_tflops(gpu, dtype, round(m) or 1, round(n) or 1, round(k) or 1)
                assert 0 < got.value <= peak, (gpu, dtype, m, n, k, got)
        bf16 = ops.peak_tflops(g, rates._runnable(g, "bf16"))
        for seq in (128, 3000, 65536):
            att = ops.attention_tflops(
                gpu, "bf16", seq_len=seq, heads=40, kv_heads=8, head_dim=128, causal=True, pass_="fwd_bwd"
            )
            assert 0 < att.value <= bf16, (gpu, seq, att)


# --- bad input ----------------------------------------------------------------------------------------------
def test_bad_values_are_one_clear_input_error() -> None:
    with pytest.raises(InputError, match="dtype 'fp4'"):
        ops.gemm_tflops("h100-sxm", "fp4", 1, 1, 1)
    with pytest.raises(InputError, match="m 0"):
        ops.gemm_tflops("h100-sxm", "bf16", 0, 1, 1)
    with pytest.raises(InputError, match="op 'broadcast'"):
        ops.collective_busbw_gbs("broadcast", "nvlink4", 8, 1, 1e6)
    with pytest.raises(InputError, match="nvlink9"):
        ops.collective_busbw_gbs("all_reduce", "nvlink9", 8, 1, 1e6)


# --- node profiles ------------------------------------------------------------------------------------------
PROFILE = {
    "name": "lab",
    "gpu": "h100-sxm",
    "gpus": 8,
    "gemm": [
        {"gpu": "h100-sxm", "dtype": "bf16", "m": m, "n": n, "k": 4096, "tflops": t, "source": "probe:lab"}
        for m, n, t in ((1024, 4096, 500.0), (4096, 4096, 600.0), (1024, 8192, 520.0), (4096, 8192, 640.0))
    ],
    "collectives": [
        {
            "op": "all_reduce",
            "link": "nvlink4",
            "gpus": 8,
            "nodes": 1,
            "nbytes": b,
            "busbw_gbs": v,
            "source": "probe:lab",
        }
        for b, v in ((1e6, 50.0), (1e9, 300.0))
    ],
}


@pytest.mark.usefixtures("fresh")
def test_a_profiles_rows_take_precedence_for_its_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "_profile_payload", lambda name: PROFILE if name == "lab" else {})
    got = ops.gemm_tflops("h100-sxm", "bf16", 4096, 4096, 4096, profile="lab")
    assert got.value == 600.0 and got.basis == "measured" and "probe:lab" in got.source
    assert ops.gemm_tflops("h100-sxm", "bf16", 2048, 4096, 4096, profile="lab").value == pytest.approx(
        math.sqrt(500.0 * 600.0)
    )
    # Another GPU, or a table the profile did not measure, reads the shipped rows.
    assert "aiconfigurator" in ops.gemm_tflops("h200", "bf16", 4096, 4096, 4096, profile="lab").source
    assert "probe:lab" not in ops.memory_gbs("h100-sxm", profile="lab").source
    bus = ops.collective_busbw_gbs("all_reduce", "nvlink4", 8, 1, 1e9, profile="lab")
    assert bus.value == 300.0 and "probe:lab" in bus.source


@pytest.mark.usefixtures("fresh")
def test_a_profile_with_a_few_rows_levels_the_shipped_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    one = {"gpu": "h100-sxm", "gemm": [dict(PROFILE["gemm"][1], tflops=700.0)]}
    monkeypatch.setattr(tables, "_profile_payload", lambda name: one)
    shipped = ops.gemm_tflops("h100-sxm", "bf16", 4096, 4096, 4096)
    at_row = ops.gemm_tflops("h100-sxm", "bf16", 4096, 4096, 4096, profile="lab")
    assert at_row.value == pytest.approx(700.0) and "levelled on 1 measured" in at_row.basis
    elsewhere = ops.gemm_tflops("h100-sxm", "bf16", 1024, 8192, 4096, profile="lab")
    ratio = 700.0 / shipped.value
    assert elsewhere.value == pytest.approx(
        ops.gemm_tflops("h100-sxm", "bf16", 1024, 8192, 4096).value * ratio
    )


def test_a_best_shape_figure_levels_the_fallback_of_a_gpu_without_a_grid() -> None:
    # MI300X has one MAMF row (stas00/ml-engineering): the fallback's curve passes through it.
    row = next(r for r in _raw("gemm") if r["gpu"] == "mi300x" and r["dtype"] == "bf16")
    got = ops.gemm_tflops("mi300x", "bf16", int(row["m"]), int(row["n"]), int(row["k"]))
    assert got.value == pytest.approx(float(row["tflops"])) and "levelled" in got.basis
    assert ops.gemm_tflops("mi300x", "bf16", 16, 4096, 4096).value < got.value / 10


@pytest.mark.usefixtures("fresh")
def test_profile_rows_without_a_gpu_column_are_the_profiles_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # The probe may write the GPU once (by an alias) and leave it off the rows.
    rows = [{k: v for k, v in r.items() if k != "gpu"} for r in PROFILE["gemm"]]
    monkeypatch.setattr(tables, "_profile_payload", lambda name: {"gpu": "H100 SXM5", "gemm": rows})
    got = ops.gemm_tflops("h100-sxm", "bf16", 4096, 4096, 4096, profile="lab")
    assert got.value == 600.0 and "probe:lab" in got.source


@pytest.mark.usefixtures("fresh")
def test_an_unknown_profile_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path))
    with pytest.raises(InputError, match="profile 'nowhere'"):
        ops.gemm_tflops("h100-sxm", "bf16", 4096, 4096, 4096, profile="nowhere")
