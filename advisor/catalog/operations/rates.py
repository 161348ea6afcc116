"""Provides the GEMM and memory-bandwidth rates of a GPU and the fallbacks every rate shares: a dtype's proxy,
a measured peer of the architecture, the datasheet peak times the median measured ratio."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.catalog.operations.grid import FALLBACK_SPREAD, SCALED_SPREAD
from advisor.catalog.operations.stored import stored_value
from advisor.catalog.operations.tables import (
    Measured,
    _check,
    _gpu,
    _grids,
    _measured,
    _measured_gpus,
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


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _Route:
    """Where a GPU's rate comes from, which does not depend on the query: a grid's answer (`grid`: the GPU and
    dtype whose rows answer) times `factor`, or the median achieved/peak ratio of every measured GPU times
    `factor` (`grid` None, `median` the dtype asked), with the basis it is stated on."""

    grid: tuple[str, str] | None
    factor: float
    per: float
    """The answer is the grid's (or the median's) x factor / per (the fallbacks' own order of arithmetic)."""
    basis: str | None
    """None: the grid's own (measured, interpolated, extrapolated)."""
    spread: float
    """Added to the answer's spread."""
    median: str = ""
    suffix: str = ""
    """Appended to the basis (the dtype a fallback came from, the dtype the GPU runs instead)."""


def _fallback_route(
    gpu: Gpu,
    table_name: str,
    has: Callable[[str], bool],
    peak: Callable[[Gpu], float | None],
    what: str,
    mine: float | None = None,
    peers_only: bool = False,
) -> _Route:
    """A GPU without its own rows: a measured peer's achieved/peak ratio times this GPU's peak (`mine`, else
    peak(gpu)), else (unless `peers_only`) the median ratio of the measured GPUs of its family (`has`:
    whether a GPU has rows); LookupError when this GPU has no peak or nothing answers."""
    mine = mine if mine is not None else peak(gpu)
    if mine is None:
        raise LookupError(f"{gpu.id}: no datasheet {what}")
    for peer in _peers(gpu.id, table_name, what):
        p = peak(peer)
        if p and has(peer.id):
            return _Route((peer.id, what), mine, p, f"scaled from {peer.id}", SCALED_SPREAD)
    if peers_only:
        raise LookupError(f"{gpu.id}: no measured peer of its architecture for {what}")
    if not any(has(other) and peak(_gpu(other)) for other in _measured_gpus(table_name)):
        raise LookupError(f"{gpu.id}: no measured {what} of any GPU")
    return _Route(None, mine, 1.0, "datasheet fallback", 0.0, median=what)


def _apply(
    route: _Route,
    gpu: Gpu,
    table_name: str,
    own: Callable[[str, str], Measured | None],
    key: tuple[object, ...] | None = None,
) -> Measured:
    """A route's answer to one query (`own` answers it from a GPU's own rows; `key` names the query, the same
    for every GPU, so that a datasheet fallback's median is worked out once per query)."""
    if route.grid is not None:
        got = own(*route.grid)
        assert got is not None, "a route reads only a grid that exists"
        value, source, spread = got.value * route.factor / route.per, got.source, got.spread
        basis = route.basis if route.basis is not None else got.basis
    else:
        d = route.median
        memo = (table_name, d, key, gpu.vendor, gpu.architecture) if key is not None else None
        median = _MEDIANS.get(memo) if memo is not None else None
        if median is None:
            shared = (table_name, d, key) if key is not None else None
            median = _family_median(gpu, table_name, _own_for(own, d), _peak_of(d), shared)
            if memo is not None:
                _MEDIANS[memo] = median
        value = route.factor * median.ratio / route.per
        basis = (route.basis or "") + median.note
        source = f"knowledge/gpus.toml {gpu.id} {d} x {median.whose} achieved/peak"
        spread = median.spread
    return Measured(value, source, basis + route.suffix, spread + route.spread)


def _fallback(
    gpu: Gpu,
    table_name: str,
    own: Callable[[str], Measured | None],
    peak: Callable[[Gpu], float | None],
    what: str,
) -> Measured:
    """_fallback_route() answered at once (`own`: a GPU's rows at the one query)."""
    route = _fallback_route(gpu, table_name, lambda gid: own(gid) is not None, peak, what)
    return _apply(route, gpu, table_name, lambda gid, _what: own(gid))


_MEDIANS: dict[tuple[object, ...], _Median] = {}
"""The family's median achieved/peak ratio, per table, dtype, query and vendor/architecture (the datasheet
fallback of a dozen GPUs asks each the same shapes)."""
_RATIOS: dict[tuple[object, ...], list[tuple[float, float, Gpu]]] = {}
"""Every measured GPU's achieved/peak ratio, per table, dtype and query: what each family's median is taken
from (the datasheet fallbacks of several vendors and architectures ask the same shapes)."""

CROSS_VENDOR_SPREAD = 0.15
"""Added to a datasheet fallback that takes its ratio from GPUs of other vendors: vendors' achieved/peak
ratios differ far more than one vendor's GPUs do (MI300X's best bf16 matmul reaches 0.51 of its datasheet
peak, H100's 0.80: stas00/ml-engineering's MAMF table)."""
COMPUTE_TABLES = ("gemm", "attention")
"""Tables whose cross-vendor fallback is scaled by the vendor's measured matmul derate."""


@dataclass(frozen=True, slots=True, repr=False)
class _Median:
    """A datasheet fallback's achieved/peak ratio and what it was taken from."""

    ratio: float
    spread: float
    """The spread of the answer (the fallback's own, widened where it reaches across vendors)."""
    whose: str
    """Whose ratio, for the source: 'median of 3 measured amd GPUs'."""
    note: str
    """Appended to the basis 'datasheet fallback': the family the ratio came from."""


def _family_median(
    gpu: Gpu,
    table_name: str,
    own: Callable[[str], Measured | None],
    peak: Callable[[Gpu], float | None],
    shared: tuple[object, ...] | None = None,
) -> _Median:
    """The achieved/peak ratio a GPU without rows (or measured peers of its architecture) takes: the median
    over measured GPUs of its vendor where there are any; else the median over every measured GPU, times
    its vendor's measured matmul derate for a compute table (its best measured GEMM against the other
    vendors', docs/operations-data.md), widened by CROSS_VENDOR_SPREAD."""
    import statistics  # on use: the statistics module costs more to import than most commands use it

    ratios = _RATIOS.get(shared) if shared is not None else None
    if ratios is None:
        ratios = _measured_ratios(table_name, own, peak)
        if shared is not None:
            _RATIOS[shared] = ratios
    kin = [r for r in ratios if r[2].vendor == gpu.vendor]
    if kin:
        named = ": " + ", ".join(r[2].id for r in kin) if len(kin) <= 3 else f" of {len(kin)} measured GPUs"
        return _Median(
            statistics.median(r[0] for r in kin),
            FALLBACK_SPREAD + max(r[1] for r in kin),
            f"median of {len(kin)} measured {gpu.vendor} GPUs'",
            f" ({gpu.vendor} ratio{named})",
        )
    ratio = statistics.median(r[0] for r in ratios)
    spread = FALLBACK_SPREAD + CROSS_VENDOR_SPREAD + max(r[1] for r in ratios)
    whose = f"median of {len(ratios)} measured GPUs' (other vendors)"
    derate = vendor_derate(gpu) if table_name in COMPUTE_TABLES else None
    if derate is None:
        return _Median(ratio, spread, whose, " (other vendors' ratio)")
    factor, kin_ids = derate
    note = f" (other vendors' ratio x {gpu.vendor} matmul derate {factor:.2f} from {kin_ids})"
    return _Median(ratio * factor, spread, whose, note)


def _measured_ratios(
    table_name: str, own: Callable[[str], Measured | None], peak: Callable[[Gpu], float | None]
) -> list[tuple[float, float, Gpu]]:
    """(achieved/peak, spread, GPU) of every GPU with rows in the table that answer the query (`shared`
    in _family_median names the query: the list is the same for every GPU asking it)."""
    ratios: list[tuple[float, float, Gpu]] = []
    for other_id in _measured_gpus(table_name):
        other = _gpu(other_id)
        got, p = own(other_id), peak(other)
        if got is not None and p:
            ratios.append((got.value / p, got.spread, other))
    return ratios


def vendor_derate(gpu: Gpu) -> tuple[float, str] | None:
    """(the median best measured 16-bit GEMM/peak of the GPUs of `gpu`'s vendor, its architecture's where
    measured, over the same median of the other vendors' GPUs; the GPUs it came from), or None where the
    vendor has no measured GEMM row."""
    import statistics  # on use: the statistics module costs more to import than most commands use it

    best = _best_gemm_ratios()
    mine = [(g, r) for g, r in best if g.vendor == gpu.vendor]
    arch = [(g, r) for g, r in mine if g.architecture == gpu.architecture]
    kin = arch or mine
    others = [r for g, r in best if g.vendor != gpu.vendor]
    if not kin or not others:
        return None
    factor = statistics.median(r for _, r in kin) / statistics.median(others)
    return factor, ", ".join(g.id for g, _ in kin)


@functools.cache
def _best_gemm_ratios() -> tuple[tuple[Gpu, float], ...]:
    """Each GPU with GEMM rows and its best measured 16-bit (bf16, else fp16) TFLOP/s over its peak."""
    out = []
    for gpu_id, tflops, dtype in _best_gemm():
        gpu = _gpu(gpu_id)
        p = peak_tflops(gpu, dtype)
        if p:
            out.append((gpu, tflops / p))
    return tuple(out)


def _best_gemm() -> list[list[Any]]:
    """[gpu, best 16-bit TFLOP/s, its dtype] of each GPU with shipped GEMM rows (stored: plain data)."""

    def build() -> list[list[Any]]:
        out: list[list[Any]] = []
        for gpu_id in _measured_gpus("gemm"):
            rows = _rows("gemm", None, gpu_id)[0]
            for dtype in ("bf16", "fp16"):
                values = [float(r["tflops"]) for r in rows if r["dtype"] == dtype]
                if values:
                    out.append([gpu_id, max(values), dtype])
                    break
        return out

    stored = stored_value("gemm", "best16", build)
    return stored if stored is not None else build()


def _runnable(gpu: Gpu, dtype: str) -> str:
    """The dtype a GPU runs a `dtype` matmul at: itself when it has a datasheet peak, else the next one."""
    if peak_tflops(gpu, dtype):
        return dtype
    for other in UNSUPPORTED_FALLBACK[dtype]:
        if peak_tflops(gpu, other):
            return other
    return next(d for d in DTYPES if peak_tflops(gpu, d))


def _route(gpu: Gpu, dtype: str, table_name: str, has: Callable[[str, str], bool]) -> _Route:
    """Where a TFLOP/s rate of one GPU comes from (`has`: whether a GPU has rows of a dtype): its own rows,
    its rows of a kernel-equivalent dtype scaled by the datasheet ratio, a measured peer's, else the datasheet
    fallback."""
    run = _runnable(gpu, dtype)
    reason = "" if run == dtype else f" ({dtype} not executed on {gpu.architecture}: {run} rate)"
    chain = DTYPE_PROXIES[run]
    if has(gpu.id, run):
        return _Route((gpu.id, run), 1.0, 1.0, None, 0.0, suffix=reason)
    for proxy in chain:
        p_run, p_proxy = peak_tflops(gpu, run), peak_tflops(gpu, proxy)
        if p_run and p_proxy and has(gpu.id, proxy):
            basis = f"scaled from {gpu.id} {proxy}"
            return _Route((gpu.id, proxy), p_run / p_proxy, 1.0, basis, SCALED_SPREAD, suffix=reason)
    # A measured peer of its architecture at a kernel-near dtype (a twin chip's bf16 rows for fp8) before
    # the datasheet fallback, which reaches to other GPUs' ratios.
    for peers_only, d in [(True, d) for d in (run, *chain)] + [(False, d) for d in (run, *chain)]:
        try:
            got = _fallback_route(
                gpu, table_name, _has_for(has, d), _peak_for(d), d, peak_tflops(gpu, run), peers_only
            )
        except LookupError:
            continue
        suffix = (f" {d}" if d != run else "") + reason
        return _Route(got.grid, got.factor, got.per, got.basis, got.spread, got.median, suffix)
    raise LookupError(f"{gpu.id}: no {table_name} rate for {dtype}")


def _rate(
    gpu: Gpu,
    dtype: str,
    table_name: str,
    own: Callable[[str, str], Measured | None],
    key: tuple[object, ...] | None = None,
) -> Measured:
    """A TFLOP/s rate of one GPU at one query (`own`: a GPU's own rows of a dtype at it): _route() applied."""
    route = _route(gpu, dtype, table_name, lambda gid, d: own(gid, d) is not None)
    return _apply(route, gpu, table_name, own, key)


def _has_for(has: Callable[[str, str], bool], dtype: str) -> Callable[[str], bool]:
    return lambda gpu_id: has(gpu_id, dtype)


def _own_for(own: Callable[[str, str], Measured | None], dtype: str) -> Callable[[str], Measured | None]:
    return lambda gpu_id: own(gpu_id, dtype)


def _peak_for(dtype: str) -> Callable[[Gpu], float | None]:
    return lambda gpu: peak_tflops(gpu, dtype)


# --- the API ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1 << 16)
def gemm_tflops(gpu: str, dtype: str, m: int, n: int, k: int, profile: str | None = None) -> Measured:
    """Achieved dense matmul TFLOP/s of C[m,n] = A[m,k] B[k,n] on one GPU (2*m*n*k FLOPs)."""
    _check("dtype", dtype, DTYPES)
    _positive(m=m, n=n, k=k)
    g = _gpu(gpu)
    query = (float(m), float(n), float(k))
    got = _apply(_gemm_route(gpu, dtype, profile), g, "gemm", _gemm_own(profile, query), (profile, query))
    if got.basis.startswith(("scaled from", "datasheet fallback")):
        # Too few rows of its own for a grid: they level a curve, the shipped one when a profile has them.
        shape_from = None if profile and _rows("gemm", profile, g.id)[1] else profile
        if shape_from != profile:
            route = _gemm_route(gpu, dtype, None)
            got = _apply(route, g, "gemm", _gemm_own(None, query), (None, query))
        got = _anchored(g, dtype, got, profile, shape_from)
    return got


def gemm_curve(gpu: str, dtype: str, profile: str | None = None) -> tuple[str, str, str | None] | None:
    """The grid (GPU, dtype, profile) whose answer a GPU's GEMM rate is an increasing function of, at every
    shape (its own, a proxy dtype's or a peer's, times constants, levelled and capped at the peak), or None
    where it is a median over several GPUs: a rate's best shape along a dimension is that grid's."""
    route = _gemm_route(gpu, dtype, profile)
    levelled = (route.basis or "").startswith(("scaled from", "datasheet fallback"))
    if levelled and profile and _rows("gemm", profile, _gpu(gpu).id)[1]:
        route, profile = _gemm_route(gpu, dtype, None), None  # the shipped curve, as gemm_tflops levels it
    return (*route.grid, profile) if route.grid is not None else None


def grid_tflops(curve: tuple[str, str, str | None], m: int, n: int, k: int) -> float:
    """A gemm_curve() grid's own answer at a shape."""
    got = _gemm_at(curve[0], curve[1], curve[2], (float(m), float(n), float(k)))
    assert got is not None, "a curve names a grid that exists"
    return got.value


@functools.lru_cache(maxsize=1024)
def _gemm_route(gpu: str, dtype: str, profile: str | None) -> _Route:
    """_route() of a GPU's GEMM rate, worked out once: whether a GPU has a grid does not depend on the shape
    (a search asks thousands of shapes of each GPU)."""

    def has(gpu_id: str, d: str) -> bool:
        return _grids("gemm", (gpu_id, d), profile)[0] is not None

    return _route(_gpu(gpu), dtype, "gemm", has)


@functools.lru_cache(maxsize=256)
def _level(
    gpu_id: str, dtype: str, profile: str | None, shape_from: str | None
) -> tuple[float, int, str, str] | None:
    """(median measured/curve ratio, rows, their sources, their dtype) of a GPU's few rows of its runnable
    dtype, else of the nearest kernel-equivalent dtype it has rows of (a chip's clock and power limit level
    every dtype of its curve: MI300X's one bf16 row levels its fp8 curve too)."""
    import statistics  # on use: the statistics module costs more to import than most commands use it

    gpu = _gpu(gpu_id)
    run = _runnable(gpu, dtype)
    mine = _rows("gemm", profile, gpu_id)[0]
    for d in (run, *DTYPE_PROXIES[run]):
        rows = [r for r in mine if r["dtype"] == d]
        # A dtype with a grid of its own already is the curve (scaled by the datasheet), not a level of it.
        gridded = d != run and _grids("gemm", (gpu_id, d), profile)[0] is not None
        if rows and peak_tflops(gpu, d) and not gridded:
            break
    else:
        return None
    ratios, sources = [], []
    for r in rows:
        at = _rate(gpu, d, "gemm", _gemm_own(shape_from, (r["m"], r["n"], r["k"])))
        ratios.append(r["tflops"] / at.value)
        if r["source"] not in sources:
            sources.append(r["source"])
    return statistics.median(ratios), len(rows), "; ".join(sources), d


def _gemm_own(profile: str | None, query: tuple[float, ...]) -> Callable[[str, str], Measured | None]:
    def own(gpu_id: str, dtype: str) -> Measured | None:
        return _gemm_at(gpu_id, dtype, profile, query)

    return own


@functools.lru_cache(maxsize=1 << 16)
def _gemm_at(gpu_id: str, dtype: str, profile: str | None, query: tuple[float, ...]) -> Measured | None:
    """One GPU's own grid at a shape (None: no grid). Memoised: the GPUs scaled from one measured peer, and
    the datasheet fallbacks' median over every measured GPU, ask each peer's grid the same shapes."""
    grid, origin = _grids("gemm", (gpu_id, dtype), profile)
    return _measured(grid, origin, query) if grid else None


def _anchored(gpu: Gpu, dtype: str, base: Measured, profile: str | None, shape_from: str | None) -> Measured:
    """A curve's shape (base, from the rows of `shape_from`), levelled by the GPU's own few measured rows (a
    best-shape figure, a short probe): the median ratio of each row to the curve at that row's shape."""
    level = _level(gpu.id, dtype, profile, shape_from)
    if level is None:
        return base
    factor, count, sources, level_dtype = level
    value = base.value * factor
    run = _runnable(gpu, dtype)
    peak = peak_tflops(gpu, run)
    of = f"{gpu.id} {level_dtype}" if level_dtype != run else gpu.id
    basis = f"{base.basis}, levelled on {count} measured {of} row{'s' if count > 1 else ''}"
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
