"""Provides the GEMM and memory-bandwidth rates of a GPU and the fallbacks every rate shares: a dtype's proxy,
a measured peer of the architecture, the datasheet peak times the median measured ratio."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING

from advisor.catalog.operations.grid import FALLBACK_SPREAD, SCALED_SPREAD
from advisor.catalog.operations.tables import (
    Measured,
    _check,
    _gpu,
    _grids,
    _lines,
    _measured,
    _positive,
    _rows,
    _short,
    peak_tflops,
)

if TYPE_CHECKING:
    from advisor.catalog.gpus import Gpu

DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
# Where a dtype has no rows, the tensor-core rate closest to it in kernels, scaled by the datasheet ratio.
DTYPE_PROXIES: dict[str, tuple[str, ...]] = {
    "fp16": ("bf16",),
    "bf16": ("fp16",),
    "fp8": ("int8", "bf16"),
    "int8": ("fp8", "bf16"),
    "tf32": ("bf16", "fp16"),
    "fp32": ("tf32", "bf16", "fp16"),
}
# A dtype the GPU does not execute runs at the next one it does (fp8 on Ampere runs as bf16).
UNSUPPORTED_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp8": ("bf16", "fp16"),
    "int8": ("fp16",),
    "bf16": ("fp16", "fp32"),
    "tf32": ("fp32",),
    "fp16": ("fp32",),
    "fp32": (),
}


@functools.lru_cache(maxsize=1024)
def _peers(gpu_id: str, table_name: str, what: str) -> tuple[Gpu, ...]:
    """The GPUs with rows in a table of the same vendor and architecture as `gpu_id`, the closest datasheet
    peak (`what`: a dtype, or the memory bandwidth) first."""
    gpu = _gpu(gpu_id)
    peak = _peak_of(what)
    mine = peak(gpu) or 1.0
    out = []
    for other_id in _measured_gpus(table_name):
        other = _gpu(other_id)
        if other.id != gpu.id and other.vendor == gpu.vendor and other.architecture == gpu.architecture:
            p = peak(other)
            if p:
                out.append(
                    (abs(math.log(p / mine)), abs(math.log(other.memory_bw_gbs / gpu.memory_bw_gbs)), other)
                )
    return tuple(g for *_, g in sorted(out, key=lambda t: (t[0], t[1], t[2].id)))


def _peak_of(what: str) -> Callable[[Gpu], float | None]:
    if what in DTYPES:
        return _peak_for(what)
    return lambda gpu: gpu.memory_bw_gbs


@functools.cache
def _measured_gpus(table_name: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(line.split(",", 1)[0] for line in _lines(table_name)[1]))


def _fallback(
    gpu: Gpu,
    table_name: str,
    own: Callable[[str], Measured | None],
    peak: Callable[[Gpu], float | None],
    what: str,
    mine: float | None = None,
) -> Measured:
    """A GPU without its own rows: a measured peer's achieved/peak ratio times this GPU's peak (`mine`, else
    peak(gpu)), else the median ratio of every measured GPU."""
    mine = mine if mine is not None else peak(gpu)
    if mine is None:
        raise LookupError(f"{gpu.id}: no datasheet {what}")
    candidates = _measured_gpus(table_name)
    for peer in _peers(gpu.id, table_name, what):
        got = own(peer.id)
        p = peak(peer)
        if got is not None and p:
            return Measured(
                got.value * mine / p, got.source, f"scaled from {peer.id}", got.spread + SCALED_SPREAD
            )
    ratios, spreads = [], []
    for other_id in candidates:
        other = _gpu(other_id)
        got, p = own(other_id), peak(other)
        if got is not None and p:
            ratios.append(got.value / p)
            spreads.append(got.spread)
    if not ratios:
        raise LookupError(f"{gpu.id}: no measured {what} of any GPU")
    source = f"knowledge/gpus.toml {gpu.id} {what} x median achieved/peak of {len(ratios)} measured GPUs"
    return Measured(
        mine * statistics.median(ratios), source, "datasheet fallback", max(spreads) + FALLBACK_SPREAD
    )


def _runnable(gpu: Gpu, dtype: str) -> str:
    """The dtype a GPU runs a `dtype` matmul at: itself when it has a datasheet peak, else the next one."""
    if peak_tflops(gpu, dtype):
        return dtype
    for other in UNSUPPORTED_FALLBACK[dtype]:
        if peak_tflops(gpu, other):
            return other
    return next(d for d in DTYPES if peak_tflops(gpu, d))


def _rate(
    gpu: Gpu,
    dtype: str,
    table_name: str,
    own: Callable[[str, str], Measured | None],
) -> Measured:
    """A TFLOP/s rate of one GPU: its own rows, its rows of a kernel-equivalent dtype scaled by the datasheet
    ratio, a measured peer's, else the datasheet fallback."""
    run = _runnable(gpu, dtype)
    reason = "" if run == dtype else f" ({dtype} not executed on {gpu.architecture}: {run} rate)"
    got = own(gpu.id, run)
    chain = DTYPE_PROXIES[run]
    for proxy in chain if got is None else ():
        base, p_run, p_proxy = own(gpu.id, proxy), peak_tflops(gpu, run), peak_tflops(gpu, proxy)
        if base is not None and p_run and p_proxy:
            got = _scaled(base, p_run / p_proxy, f"scaled from {gpu.id} {proxy}")
            break
    for d in (run, *chain) if got is None else ():
        try:
            got = _fallback(
                gpu,
                table_name,
                _own_for(own, d),
                _peak_for(d),
                d,
                peak_tflops(gpu, run),
            )
        except LookupError:
            continue
        if d != run:
            got = Measured(got.value, got.source, f"{got.basis} {d}", got.spread)
        break
    if got is None:
        raise LookupError(f"{gpu.id}: no {table_name} rate for {dtype}")
    return Measured(got.value, got.source, got.basis + reason, got.spread) if reason else got


def _own_for(own: Callable[[str, str], Measured | None], dtype: str) -> Callable[[str], Measured | None]:
    return lambda gpu_id: own(gpu_id, dtype)


def _peak_for(dtype: str) -> Callable[[Gpu], float | None]:
    return lambda gpu: peak_tflops(gpu, dtype)


def _scaled(base: Measured, factor: float, basis: str) -> Measured:
    return Measured(base.value * factor, base.source, basis, base.spread + SCALED_SPREAD)


# --- the API ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1 << 16)
def gemm_tflops(gpu: str, dtype: str, m: int, n: int, k: int, profile: str | None = None) -> Measured:
    """Achieved dense matmul TFLOP/s of C[m,n] = A[m,k] B[k,n] on one GPU (2*m*n*k FLOPs)."""
    _check("dtype", dtype, DTYPES)
    _positive(m=m, n=n, k=k)
    g = _gpu(gpu)
    query = (float(m), float(n), float(k))
    got = _rate(g, dtype, "gemm", _gemm_own(profile, query))
    if got.basis.startswith(("scaled from", "datasheet fallback")):
        # Too few rows of its own for a grid: they level a curve, the shipped one when a profile has them.
        shape_from = None if profile and _rows("gemm", profile, g.id)[1] else profile
        base = got if shape_from == profile else _rate(g, dtype, "gemm", _gemm_own(None, query))
        got = _anchored(g, dtype, base, profile, shape_from)
    return got


@functools.lru_cache(maxsize=256)
def _level(
    gpu_id: str, dtype: str, profile: str | None, shape_from: str | None
) -> tuple[float, int, str] | None:
    """(median measured/curve ratio, rows, their sources) of a GPU's few rows of its runnable dtype."""
    gpu = _gpu(gpu_id)
    run = _runnable(gpu, dtype)
    rows = [r for r in _rows("gemm", profile, gpu_id)[0] if r["dtype"] == run]
    if not rows:
        return None
    ratios, sources = [], []
    for r in rows:
        at = _rate(gpu, dtype, "gemm", _gemm_own(shape_from, (r["m"], r["n"], r["k"])))
        ratios.append(r["tflops"] / at.value)
        if r["source"] not in sources:
            sources.append(r["source"])
    return statistics.median(ratios), len(rows), "; ".join(sources)


def _gemm_own(profile: str | None, query: tuple[float, ...]) -> Callable[[str, str], Measured | None]:
    def own(gpu_id: str, dtype: str) -> Measured | None:
        grid, origin = _grids("gemm", (gpu_id, dtype), profile)
        return _measured(grid, origin, query) if grid else None

    return own


def _anchored(gpu: Gpu, dtype: str, base: Measured, profile: str | None, shape_from: str | None) -> Measured:
    """A curve's shape (base, from the rows of `shape_from`), levelled by the GPU's own few measured rows (a
    best-shape figure, a short probe): the median ratio of each row to the curve at that row's shape."""
    level = _level(gpu.id, dtype, profile, shape_from)
    if level is None:
        return base
    factor, count, sources = level
    value = base.value * factor
    peak = peak_tflops(gpu, _runnable(gpu, dtype))
    basis = f"{base.basis}, levelled on {count} measured {gpu.id} row{'s' if count > 1 else ''}"
    source = _short(f"{sources} (level); {base.source} (shape)")
    return Measured(min(value, peak) if peak else value, source, basis, base.spread)


MEMORY_OPS = ("copy", "triad", "read", "other")


@functools.lru_cache(maxsize=4096)
def memory_gbs(gpu: str, nbytes: float | None = None, profile: str | None = None) -> Measured:
    """Achieved device-memory bandwidth (GB/s) of a streaming kernel moving `nbytes` (None: a large one)."""
    if nbytes is not None:
        _positive(nbytes=nbytes)
    g = _gpu(gpu)

    def own(gid: str) -> Measured | None:
        for op in MEMORY_OPS:
            grid, origin = _grids("memory", (gid, op), profile)
            if grid is not None:
                return _measured(grid, origin, (float(nbytes) if nbytes else grid.axes[0][-1],))
        return None

    got = own(g.id)
    if got is not None:
        return got
    return _fallback(g, "memory", own, _peak_of("memory bandwidth"), "memory bandwidth")
