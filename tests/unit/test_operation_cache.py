"""The measured-operation grids precompiled into the knowledge cache (advisor/catalog/operations/stored.py):
each stored grid is the one built from the rows, value for value, and a command reads them instead of the
rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.catalog import operations as ops
from advisor.catalog.operations import attention, links, tables

TABLES = {spec.table for spec in tables.GROUPS.values()}


@pytest.fixture
def fresh() -> Iterator[None]:
    ops.clear_cache()
    yield
    ops.clear_cache()


def _parts(table: str) -> list[str]:
    per_gpu = any(spec.per_gpu for spec in tables.GROUPS.values() if spec.table == table)
    return list(tables._measured_gpus(table)) if per_gpu else [""]


@pytest.mark.parametrize("table", sorted(TABLES))
def test_stored_grids_are_the_built_ones(table: str, fresh: None, tmp_path: Path, monkeypatch) -> None:
    """Every group of every GPU's rows: the grid read back from a cache entry equals the grid built from the
    rows (axes, measured points, every filled log value, source, scaling below the grid)."""
    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path))
    groups = 0
    for part in _parts(table):
        written = tables._stored(table, part)  # built and written
        tables._stored.cache_clear()
        read = tables._stored(table, part)  # read back from the entry
        assert written is not None and read is not None
        assert written == read
        for key, grid in read.items():
            assert grid == tables._built(key[0], key[1:]), key
            groups += 1
    assert groups > 0
    assert any(p.suffix == ".json" for p in (tmp_path / "gpu-advisor").iterdir())


def test_without_a_cache_grids_are_built_on_use(fresh: None, monkeypatch) -> None:
    monkeypatch.setenv("GPU_ADVISOR_NO_CACHE", "1")
    assert tables._stored("gemm", "h100-sxm") is None
    grid, origin = tables._grids("gemm", ("h100-sxm", "bf16"), None)
    assert grid is not None and origin == ""
    assert grid == tables._built("gemm", ("h100-sxm", "bf16"))


def test_a_gpu_without_rows_has_no_entry(fresh: None, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path))
    assert tables._stored("gemm", "t4") == {}
    assert tables._grids("gemm", ("t4", "fp16"), None) == (None, "")
    names = [p.name for p in (tmp_path / "gpu-advisor").iterdir()]
    assert names and all(n.startswith("operations_gemm.csv.index.") for n in names)  # which GPUs have rows


PROBE = """
import json
from advisor.catalog.operations import attention_tflops, collective_busbw_gbs, gemm_tflops, tables
parsed = []
parse = tables._parse
tables._parse = lambda name, lines: parsed.append(len(lines)) or parse(name, lines)
got = [
    gemm_tflops("h100-sxm", "bf16", 4096, 4096, 4096),
    gemm_tflops("l4", "bf16", 1024, 8192, 4096),
    attention_tflops(
        "h100-sxm", "bf16", seq_len=4096, heads=32, kv_heads=8, head_dim=128, causal=True, pass_="fwd_bwd"
    ),
    attention_tflops(
        "b200", "bf16", seq_len=8192, heads=64, kv_heads=8, head_dim=64, causal=True, pass_="bwd"
    ),
    collective_busbw_gbs("all_reduce", "ib-ndr400", 64, 8, 2**28),
    collective_busbw_gbs("all_gather", "ib-ndr400", 256, 32, 2**26),
    collective_busbw_gbs("all_to_all", "efa-400", 64, 8, 2**24),
    collective_busbw_gbs("reduce_scatter", "nvlink4", 8, 1, 2**20),
]
print(json.dumps([[m.value, m.source, m.basis, m.spread] for m in got]))
print(sum(parsed))
"""


def test_a_warm_process_answers_the_same_without_parsing_rows(tmp_path: Path) -> None:
    """A second process reads the grids from the cache: the same answers as the first, which built them, and
    as a process with no cache; the warm one parses no rows."""
    env = {**os.environ, "GPU_ADVISOR_CACHE_DIR": str(tmp_path)}
    env.pop("GPU_ADVISOR_NO_CACHE", None)

    def run(extra: dict[str, str]) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", PROBE], env={**env, **extra}, capture_output=True, text=True, check=True
        )
        return out.stdout.splitlines()

    cold, warm, uncached = run({}), run({}), run({"GPU_ADVISOR_NO_CACHE": "1"})
    assert json.loads(cold[0]) == json.loads(warm[0]) == json.loads(uncached[0])
    assert int(cold[1]) > 0 and int(uncached[1]) > 0
    assert warm[1] == "0"


def test_the_gpus_with_rows_are_stored(fresh: None, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path))
    for table in sorted(TABLES):
        stored = tables._measured_gpus(table)
        tables._measured_gpus.cache_clear()
        assert stored == tables._measured_gpus(table) == tuple(tables._lines_by_gpu(table))


def test_stored_derived_figures_are_the_computed_ones(fresh: None, tmp_path: Path, monkeypatch) -> None:
    """The pass ratios, each link's plateaus, servers measured and links measured: read back from the cache
    as computed from the rows."""
    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path))
    assert attention._stored_pass_ratios() is not None
    attention._stored_pass_ratios.cache_clear()
    ratios = attention._stored_pass_ratios()
    assert ratios and any(r is not None for r in ratios.values())
    for (have, want, dtype), ratio in ratios.items():
        assert ratio == attention._pass_ratio_of(have, want, dtype)
    assert links._stored_plateaus() is not None
    links._stored_plateaus.cache_clear()
    plateaus = links._stored_plateaus()
    assert plateaus and any(plateaus.values())
    rows = tables.table("collectives")
    assert set(plateaus) == {r["link"] for r in rows} == set(links._shipped_links())
    for link, got in plateaus.items():
        assert got == links._plateaus_of(link, None)
        for op in {r["op"] for r in rows}:
            nodes = {r["nodes"] for r in rows if r["op"] == op and r["link"] == link}
            assert links._measured_nodes(op, link, None) == tuple(sorted(nodes))


def test_stored_best_bus_bandwidth_is_the_sweep(fresh: None, tmp_path: Path, monkeypatch) -> None:
    """A collective's best bus bandwidth inside one server (a search's lower bound): written to the cache and
    read back, the very float the sweep over every size gives, on every shipped in-server link and op with
    rows; OpPrices.best_busbw gives the same with and without a cache, and sweeps where nothing is stored."""
    from advisor.catalog.loader import load_knowledge
    from advisor.physics.op_prices import _SIZES, _SWEEP, OpPrices

    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path))
    rows = tables.table("collectives")
    keys = sorted({(r["op"], r["link"]) for r in rows if r["nodes"] == 1})
    assert keys
    for op, link in keys:
        for gpus in (2, 4, 8):
            swept = max(links.collective_busbw_gbs(op, link, gpus, 1, s).value for s in _SIZES)
            written = links.best_busbw_gbs(op, link, gpus, _SIZES)
            assert written == swept, (op, link, gpus)
            ops.clear_cache()
            assert links.best_busbw_gbs(op, link, gpus, _SIZES) == swept  # read back
    assert links.best_busbw_gbs("all_reduce", "ib-ndr400", 16, _SIZES) is None  # between servers
    assert links.best_busbw_gbs("all_reduce", keys[0][1], 1, _SIZES) is None  # nothing crosses a link
    gpu = load_knowledge().gpu("h100-sxm")
    asked = [
        (op, g, n) for op in ("all_reduce", "all_gather", "send_recv") for g, n in ((2, 1), (8, 1), (16, 2))
    ]
    ops.clear_cache()
    cached = OpPrices(gpu, gpu.fabric)
    from_cache = [cached.best_busbw(*a) for a in asked]
    assert any(
        p.name.startswith("operations_collectives.csv.best.") for p in (tmp_path / "gpu-advisor").iterdir()
    )
    monkeypatch.setenv("GPU_ADVISOR_NO_CACHE", "1")
    ops.clear_cache()
    uncached = OpPrices(gpu, gpu.fabric)
    for (op, gpus, nodes), got in zip(asked, from_cache, strict=True):
        swept = max(uncached.busbw(op, gpus, nodes, s)[0] for s in _SWEEP)
        assert got == uncached.best_busbw(op, gpus, nodes) == swept, (op, gpus, nodes)
