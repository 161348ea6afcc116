"""Provides measured operation speeds (GEMM, attention, memory bandwidth, collectives) from
knowledge/operations/*.csv or a node profile: interpolated in the measured grid, extrapolated and fallen back
to transparently (every answer says its basis, source and extra uncertainty)."""

from __future__ import annotations

import bisect
import csv
import functools
import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.question.errors import InputError

if TYPE_CHECKING:
    from advisor.catalog.gpus import Gpu

# Extra relative uncertainty by how far an answer is from its own GPU's measured grid. Outside the grid each
# doubling beyond its edge adds EXTRA_PER_DOUBLING (an achieved rate curve bends most near its edges); a rate
# scaled from another GPU of the architecture keeps that GPU's shape but not its clocks, power limit or
# memory (H100 SXM vs PCIe differ by 15-30% beyond the peak ratio); the datasheet fallback knows neither.
EXTRAPOLATED_SPREAD = 0.10
EXTRA_PER_DOUBLING = 0.05
MAX_SPREAD = 1.0
SCALED_SPREAD = 0.15
FALLBACK_SPREAD = 0.30
PROXY_HEADS_SPREAD = 0.05
"""A measured attention row of another head configuration (nearest head_dim, GQA ratio, heads)."""

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
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
ATTENTION_PASSES = ("fwd", "bwd", "fwd_bwd")
KERNELS = ("fa3", "fa2", "cudnn", "sdpa", "triton", "other")
NVLINK_GENERATION = {"volta": 2, "ampere": 3, "hopper": 4, "blackwell": 5}
# Catalogue fabric keys (knowledge/assumptions.toml [fabric.*]) and the link keys of their measured rows.
FABRIC_LINKS = {"ib-ndr": "ib-ndr400", "ib-hdr": "ib-hdr200", "roce-200": "roce-200", "eth-100": "eth-100"}


@dataclass(frozen=True, slots=True)
class Measured:
    """One operation's achieved rate: TFLOP/s (GEMM, attention) or GB/s (memory, bus bandwidth)."""

    value: float
    source: str
    """The source(s) of the rows it came from (short citation)."""
    basis: str
    """measured | interpolated | extrapolated | scaled from <gpu> | datasheet fallback (a reason may
    follow)."""
    spread: float
    """Extra relative uncertainty: 0.0 inside the measured grid, larger outside it and for fallbacks."""


# --- reading ------------------------------------------------------------------------------------------------
TABLES = ("gemm", "attention", "memory", "collectives")
NUMERIC = {"m", "n", "k", "tflops", "batch", "seq_len", "heads", "kv_heads", "head_dim", "nbytes", "gbs"}
NUMERIC |= {"gpus", "nodes", "busbw_gbs"}
UNSTATED_BYTES = float(1 << 30)
"""The size taken for a memory row whose source gives none (1 GiB: past every cache)."""


@functools.cache
def _lines(name: str) -> tuple[list[str], tuple[str, ...]]:
    """A shipped table's column names and its raw data lines (parsed only when a GPU's rows are asked)."""
    from advisor.catalog.common import shipped_root

    text = shipped_root().joinpath("operations", f"{name}.csv").read_text(encoding="utf-8")
    header, *lines = text.splitlines()
    return header.split(","), tuple(line for line in lines if line)


def _parse(name: str, lines: Sequence[str]) -> tuple[dict[str, Any], ...]:
    columns = _lines(name)[0]
    return tuple(_typed(dict(zip(columns, fields, strict=True))) for fields in csv.reader(lines))


def _typed(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in NUMERIC & out.keys():
        text = out[key]
        # An empty size is a source that did not state it; a streaming benchmark then used a large buffer.
        out[key] = UNSTATED_BYTES if key == "nbytes" and text in ("", None) else float(text)
    if "causal" in out and isinstance(out["causal"], str):
        out["causal"] = out["causal"].strip().lower() in ("true", "1", "yes")
    if "seq_len" in out and "batch" in out:
        # Attention interpolates over the sequence and the tokens of a call (batch x sequence): past a few
        # thousand tokens per head the GPU is full and the rate is the sequence's (FlashAttention's own grids
        # hold batch x sequence at 16k).
        out["tokens"] = out["batch"] * out["seq_len"]
    return out


@functools.cache
def table(name: str) -> tuple[dict[str, Any], ...]:
    """The shipped rows of one table (read once per process)."""
    return _parse(name, _lines(name)[1])


@functools.lru_cache(maxsize=256)
def _gpu_rows(name: str, gpu: str) -> tuple[dict[str, Any], ...]:
    """The shipped rows of one GPU (its lines start with its id): a predict parses only the GPUs it asks."""
    prefix = gpu + ","
    return _parse(name, [line for line in _lines(name)[1] if line.startswith(prefix)])


def _profile_payload(name: str) -> dict[str, Any]:
    """A node profile's payload ({"gpu", "gemm": [rows], ...}); InputError when there is none of that name."""
    try:
        from advisor.catalog.node_profile import load_operations  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # the probe's module is not in this build: read the file as it is written
        load_operations = _read_profile_file
    payload = load_operations(name)
    if payload is None:
        raise InputError(
            f"profile {name!r}: no node profile of that name (`gpu-advisor probe` on the node saves one)",
            field="profile",
            value=name,
            problem="has no node profile",
            accepted="the name of a profile `gpu-advisor probe` saved",
        )
    return dict(payload)


def _read_profile_file(name: str) -> dict[str, Any] | None:
    import json

    from advisor.catalog.userdata import data_dir

    path = data_dir() / "profiles" / name / "operations.json"
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


@functools.lru_cache(maxsize=16)
def _profile(name: str) -> tuple[str, dict[str, tuple[dict[str, Any], ...]]]:
    payload = _profile_payload(name)
    gpu = _catalogue_id(str(payload.get("gpu") or ""))
    rows = {t: tuple(_typed(_with_id(dict(r), gpu, t)) for r in payload.get(t) or ()) for t in TABLES}
    return gpu, rows


def _catalogue_id(name: str) -> str:
    """A GPU name or alias as its catalogue id (a probe may write either); unknown names stay as written."""
    if not name:
        return name
    try:
        return _gpu(name).id
    except InputError:
        return name


def _with_id(row: dict[str, Any], gpu: str, table_name: str) -> dict[str, Any]:
    """A profile row with its GPU's catalogue id: its own, else the profile's (collectives have none)."""
    if table_name != "collectives":
        row["gpu"] = _catalogue_id(str(row["gpu"])) if row.get("gpu") else gpu
    return row


def _rows(name: str, profile: str | None, gpu: str | None) -> tuple[tuple[dict[str, Any], ...], str]:
    """The rows of one table for one GPU (all GPUs when None): a profile's rows for its GPU first."""
    if profile:
        rows = _profile(profile)[1]
        mine = rows[name]
        if gpu is not None:
            mine = tuple(r for r in mine if r.get("gpu") == gpu)
        if mine:
            return mine, f"profile {profile}"
    return (table(name) if gpu is None else _gpu_rows(name, gpu)), ""


def clear_cache() -> None:
    """Forget what was read and computed (a test, a new profile)."""
    table.cache_clear()
    _profile.cache_clear()
    caches = (
        _grids,
        _attention_keys,
        _pass_ratio,
        _link_nominals,
        _measured_gpus,
        _peers,
        _level,
        _shipped_groups,
        _lines,
        _gpu_rows,
    )
    for cached in caches:
        cached.cache_clear()
    gemm_tflops.cache_clear()
    attention_tflops.cache_clear()
    memory_gbs.cache_clear()
    collective_busbw_gbs.cache_clear()


# --- interpolation ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Grid:
    """Measured points over positive axes: multilinear interpolation in log space (sizes and values). A
    point of the axes' product that no row measured holds its nearest measured neighbour's value, and an
    answer leaning on one is extrapolated."""

    axes: tuple[tuple[float, ...], ...]
    points: dict[tuple[float, ...], float]
    """Measured points (the mean where several rows measured one)."""
    logs: dict[tuple[float, ...], float]
    """log(value) at every point of the axes' product, the unmeasured ones filled."""
    source: str
    below: tuple[float, ...]
    """Per axis, how the value scales below the grid's first point: 0 holds it, 1 keeps the time of that
    point (a GEMM below its smallest measured m, n or k is latency-bound: its rate falls with its size)."""

    @classmethod
    def of(cls, points: dict[tuple[float, ...], list[float]], source: str, below: Sequence[float]) -> Grid:
        dims = len(next(iter(points)))
        axes = tuple(tuple(sorted({p[i] for p in points})) for i in range(dims))
        merged = {p: statistics.fmean(v) for p, v in points.items()}
        logs = _filled(axes, {p: math.log(v) for p, v in merged.items()})
        return cls(axes, merged, logs, source, tuple(below))

    def at(self, query: Sequence[float]) -> tuple[float, str, float]:
        """(value, basis, spread) at a point."""
        scale, doublings, clamped = 1.0, 0.0, []
        for axis, q, below in zip(self.axes, query, self.below, strict=True):
            lo, hi = axis[0], axis[-1]
            c = min(max(q, lo), hi)
            if q != c:
                doublings += abs(math.log2(q / c))
                if q < lo:
                    scale *= (q / lo) ** below
            clamped.append(c)
        value, exact, filled = self._inside(tuple(clamped))
        if doublings > 0 or filled:
            spread = min(MAX_SPREAD, EXTRAPOLATED_SPREAD + EXTRA_PER_DOUBLING * doublings)
            return value * scale, "extrapolated", spread
        return value, ("measured" if exact else "interpolated"), 0.0

    def _inside(self, q: tuple[float, ...]) -> tuple[float, bool, bool]:
        """(value, a measured point, leans on an unmeasured point) inside the axes."""
        exact = self.points.get(q)
        if exact is not None:
            return exact, True, False
        acc, filled = 0.0, False
        for corner, w in _corners([_bracket(axis, x) for axis, x in zip(self.axes, q, strict=True)]):
            if w > 0:
                acc += w * self.logs[corner]
                filled = filled or corner not in self.points
        return math.exp(acc), False, filled


def _filled(
    axes: tuple[tuple[float, ...], ...], logs: dict[tuple[float, ...], float]
) -> dict[tuple[float, ...], float]:
    """Every point of the axes' product: a missing one takes the value of the nearest measured point along
    one axis (axis by axis, so a whole missing line takes its neighbour line's), else the nearest overall."""
    out = dict(logs)
    missing = [p for p in itertools.product(*axes) if p not in out]
    for _ in range(len(axes)):
        if not missing:
            break
        for d, axis in enumerate(axes):
            still = []
            for p in missing:
                line = [(abs(math.log(x / p[d])), (*p[:d], x, *p[d + 1 :])) for x in axis]
                near = min(((dist, q) for dist, q in line if q in out), default=None)
                if near is None:
                    still.append(p)
                else:
                    out[p] = out[near[1]]
            missing = still
    for p in missing:
        out[p] = logs[min(logs, key=functools.partial(_log_distance, p))]
    return out


def _log_distance(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum(math.log(x / y) ** 2 for x, y in zip(a, b, strict=True))


def _bracket(axis: tuple[float, ...], x: float) -> tuple[float, float, float]:
    """(lower, upper, weight of upper) in log space; x is inside the axis."""
    i = bisect.bisect_left(axis, x)
    if i < len(axis) and axis[i] == x:
        return axis[i], axis[i], 0.0
    lo, hi = axis[i - 1], axis[i]
    return lo, hi, math.log(x / lo) / math.log(hi / lo)


def _corners(brackets: list[tuple[float, float, float]]) -> list[tuple[tuple[float, ...], float]]:
    out: list[tuple[tuple[float, ...], float]] = [((), 1.0)]
    for lo, hi, t in brackets:
        step = [((*c, lo), w * (1 - t)) for c, w in out]
        if hi != lo:
            step += [((*c, hi), w * t) for c, w in out]
        out = step
    return out


def _grid(
    rows: Sequence[dict[str, Any]], axes: Sequence[str], value: str, below: Sequence[float], one_source: bool
) -> Grid | None:
    """The grid of a group's rows: every source merged, or (one_source) the source with the most rows, so that
    a sweep is not bent by one best-shape figure of another method; None below MIN_GRID_POINTS points."""
    if one_source and rows:
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["source"]] = counts.get(r["source"], 0) + 1
        main = max(counts, key=lambda src: (counts[src], src))
        rows = [r for r in rows if r["source"] == main]
    points: dict[tuple[float, ...], list[float]] = {}
    sources: list[str] = []
    for r in rows:
        if r[value] > 0 and all(r[a] > 0 for a in axes):
            points.setdefault(tuple(r[a] for a in axes), []).append(r[value])
            if r["source"] not in sources:
                sources.append(r["source"])
    if len(points) < (MIN_GRID_POINTS if one_source else 1):
        return None
    return Grid.of(points, "; ".join(sources), below)


MIN_GRID_POINTS = 4
"""Fewer measured points than this (one best-shape figure) anchor a GPU's fallback rather than form a grid."""


@functools.lru_cache(maxsize=4096)
def _grids(kind: str, key: tuple[Any, ...], profile: str | None) -> tuple[Grid | None, str]:
    """The grid of one group of rows, keyed by kind and the group's columns; with the profile it came from."""
    spec = GROUPS[kind]
    gpu = key[0] if spec.per_gpu else None
    rows, origin = _rows(spec.table, profile, gpu)
    if origin or spec.per_gpu:
        mine = [r for r in rows if all(_same(r[c], v) for c, v in zip(spec.key, key, strict=True))]
    else:
        mine = _shipped_groups(kind).get(tuple(_norm(v) for v in key), [])
    grid = _grid(mine, spec.axes, spec.value, spec.below, spec.one_source)
    if grid is None and origin and kind != "gemm":
        # Too few profile points for a grid: the shipped rows (a GEMM's few rows level them instead).
        return _grids(kind, key, None)
    return grid, origin


@functools.cache
def _shipped_groups(kind: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """The shipped rows of a kind by their group key (read once)."""
    spec = GROUPS[kind]
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in table(spec.table):
        out.setdefault(tuple(_norm(r[c]) for c in spec.key), []).append(r)
    return out


def _norm(value: Any) -> Any:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) if not isinstance(b, float) else math.isclose(float(a), b)


@dataclass(frozen=True, slots=True)
class GroupSpec:
    table: str
    key: tuple[str, ...]
    axes: tuple[str, ...]
    value: str
    below: tuple[float, ...]
    per_gpu: bool = True
    one_source: bool = False


GROUPS = {
    "gemm": GroupSpec("gemm", ("gpu", "dtype"), ("m", "n", "k"), "tflops", (1.0, 1.0, 1.0), one_source=True),
    "attention": GroupSpec(
        "attention",
        ("gpu", "dtype", "kernel", "pass", "causal", "head_dim", "heads", "kv_heads"),
        ("seq_len", "tokens"),
        "tflops",
        (0.0, 0.0),
        one_source=True,
    ),
    "memory": GroupSpec("memory", ("gpu", "op"), ("nbytes",), "gbs", (0.0,)),
    "collectives": GroupSpec(
        "collectives", ("op", "link", "nodes"), ("gpus", "nbytes"), "busbw_gbs", (0.0, 0.0), per_gpu=False
    ),
}


def _measured(grid: Grid, origin: str, query: Sequence[float]) -> Measured:
    value, basis, spread = grid.at(query)
    source = f"{origin}: {grid.source}" if origin else grid.source
    return Measured(value, _short(source), basis, spread)


def _short(source: str) -> str:
    """One citation per distinct source file (the repository once, at its commit)."""
    return source if len(source) <= 400 else source[:397] + "..."


# --- the GPU catalogue --------------------------------------------------------------------------------------
def _gpu(name: str) -> Gpu:
    from advisor.catalog.loader import load_knowledge

    return load_knowledge().gpu(name)


def _catalogue() -> tuple[Gpu, ...]:
    from advisor.catalog.loader import load_knowledge

    return load_knowledge().gpus


def peak_tflops(gpu: Gpu, dtype: str) -> float | None:
    """The datasheet dense peak of knowledge/gpus.toml (None: not executed or not sourced)."""
    value = getattr(gpu.tflops, dtype, None)
    return float(value) if value else None


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


def _check(name: str, value: object, accepted: Sequence[str]) -> None:
    if value not in accepted:
        raise InputError(
            f"{name} {value!r} is not one of {', '.join(accepted)}",
            field=name,
            value=str(value),
            problem="is not accepted",
            accepted=", ".join(accepted),
        )


def _positive(**sizes: float) -> None:
    for name, value in sizes.items():
        if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
            raise InputError(
                f"{name} {value!r} is not a positive size",
                field=name,
                value=str(value),
                problem="is not positive",
                accepted="a positive number",
            )


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


@functools.lru_cache(maxsize=1 << 14)
def attention_tflops(
    gpu: str,
    dtype: str,
    *,
    seq_len: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    causal: bool,
    pass_: str,
    batch: int = 1,
    kernel: str | None = None,
    profile: str | None = None,
) -> Measured:
    """Achieved attention TFLOP/s as FlashAttention counts it (forward 4*b*s^2*h*d, halved when causal; the
    backward pass 2.5x the forward's FLOPs; fwd_bwd both)."""
    _check("dtype", dtype, DTYPES)
    _check("pass", pass_, ATTENTION_PASSES)
    if kernel is not None:
        _check("kernel", kernel, KERNELS)
    _positive(seq_len=seq_len, heads=heads, kv_heads=kv_heads, head_dim=head_dim, batch=batch)
    g = _gpu(gpu)
    if pass_ == "fwd_bwd" and not any(k[3] == "fwd_bwd" for k in _attention_keys(g.id, profile)):
        return _forward_and_backward(
            g.id, dtype, seq_len, heads, kv_heads, head_dim, causal, batch, kernel, profile
        )
    want = _AttentionQuery(pass_, bool(causal), kernel, float(head_dim), float(heads), float(kv_heads))

    def own(gid: str, d: str) -> Measured | None:
        return _attention_own(gid, d, want, (float(seq_len), float(batch * seq_len)), profile)

    return _rate(g, dtype, "attention", own)


BASIS_ORDER = ("measured", "interpolated", "extrapolated", "scaled from", "datasheet fallback")


def _forward_and_backward(
    gpu: str,
    dtype: str,
    seq_len: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    causal: bool,
    batch: int,
    kernel: str | None,
    profile: str | None,
) -> Measured:
    """A forward and a backward pass in one rate: their times add, over 1 + 2.5 forward-FLOP units."""
    shape = {"seq_len": seq_len, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "causal": causal}
    fwd = attention_tflops(gpu, dtype, **shape, pass_="fwd", batch=batch, kernel=kernel, profile=profile)
    bwd = attention_tflops(gpu, dtype, **shape, pass_="bwd", batch=batch, kernel=kernel, profile=profile)
    value = 3.5 / (1.0 / fwd.value + 2.5 / bwd.value)
    worst = max((fwd, bwd), key=lambda m: next(i for i, b in enumerate(BASIS_ORDER) if m.basis.startswith(b)))
    source = fwd.source if fwd.source == bwd.source else _short(f"{fwd.source} (fwd); {bwd.source} (bwd)")
    return Measured(value, source, worst.basis, max(fwd.spread, bwd.spread))


@dataclass(frozen=True, slots=True)
class _AttentionQuery:
    pass_: str
    causal: bool
    kernel: str | None
    head_dim: float
    heads: float
    kv_heads: float


@functools.lru_cache(maxsize=256)
def _attention_keys(gpu: str, profile: str | None) -> tuple[tuple[Any, ...], ...]:
    rows, _ = _rows("attention", profile, gpu)
    cols = GROUPS["attention"].key
    return tuple(sorted({tuple(r[c] for c in cols) for r in rows}, key=str))


def _attention_own(
    gpu: str, dtype: str, want: _AttentionQuery, at: tuple[float, float], profile: str | None
) -> Measured | None:
    """One GPU's own rows: the wanted pass and causality (else the forward pass scaled by the ratio measured
    on GPUs that have both), the wanted kernel if measured, the nearest head configuration."""
    keys = [k for k in _attention_keys(gpu, profile) if k[1] == dtype]
    if not keys:
        return None
    key, extra = _nearest_attention_key(keys, want)
    if key is None:
        return None
    grid, origin = _grids("attention", key, profile)
    if grid is None:
        return None
    got = _measured(grid, origin, at)
    spread = got.spread + extra
    if key[3] != want.pass_:
        factor = _pass_ratio(key[3], want.pass_, dtype)
        if factor is None:
            return None
        return Measured(got.value * factor, got.source, f"scaled from {gpu} {key[3]}", spread + SCALED_SPREAD)
    basis = "interpolated" if extra and got.basis == "measured" else got.basis
    return Measured(got.value, got.source, basis, spread)


def _nearest_attention_key(
    keys: list[tuple[Any, ...]], want: _AttentionQuery
) -> tuple[tuple[Any, ...] | None, float]:
    def cost(k: tuple[Any, ...]) -> tuple[float, ...]:
        _, _, kernel, pass_, causal, head_dim, heads, kv_heads = k
        kernel_rank = 0 if kernel == want.kernel else 1 + KERNELS.index(kernel) if kernel in KERNELS else 9
        gqa = abs(math.log((heads / kv_heads) / (want.heads / want.kv_heads)))
        shape = 2 * abs(math.log(head_dim / want.head_dim)) + gqa + 0.5 * abs(math.log(heads / want.heads))
        # A kernel asked for comes first; otherwise the nearest head configuration, then the kernel order.
        asked = kernel_rank if want.kernel is not None else 0
        return (pass_ != want.pass_, causal != want.causal, asked, shape, kernel_rank)

    best = min(keys, key=cost)
    c = cost(best)
    extra = (PROXY_HEADS_SPREAD if c[3] > 1e-9 else 0.0) + (EXTRAPOLATED_SPREAD if c[1] else 0.0)
    if want.kernel is not None and best[2] != want.kernel:
        extra += EXTRAPOLATED_SPREAD
    return best, extra


@functools.lru_cache(maxsize=64)
def _pass_ratio(have: str, want: str, dtype: str) -> float | None:
    """The median ratio of `want`-pass to `have`-pass TFLOP/s over the shipped rows measured both ways."""
    by: dict[tuple[Any, ...], dict[str, float]] = {}
    for r in table("attention"):
        if r["dtype"] == dtype and r["pass"] in (have, want):
            key = (
                r["gpu"],
                r["kernel"],
                r["causal"],
                r["batch"],
                r["seq_len"],
                r["heads"],
                r["kv_heads"],
                r["head_dim"],
            )
            by.setdefault(key, {})[r["pass"]] = r["tflops"]
    ratios = [v[want] / v[have] for v in by.values() if have in v and want in v and v[have] > 0]
    return statistics.median(ratios) if ratios else None


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


# --- collectives --------------------------------------------------------------------------------------------
# Where an op has no rows on a link, the op whose traffic pattern is nearest (ring algorithms: a
# reduce-scatter moves what an all-gather moves; an all-reduce is both; send/recv is one ring step of an
# all-gather).
OP_PROXIES: dict[str, tuple[str, ...]] = {
    "all_reduce": ("reduce_scatter", "all_gather"),
    "all_gather": ("reduce_scatter", "all_reduce"),
    "reduce_scatter": ("all_gather", "all_reduce"),
    "all_to_all": ("all_gather", "reduce_scatter"),
    "send_recv": ("all_gather", "all_to_all"),
}


@functools.lru_cache(maxsize=1 << 14)
def collective_busbw_gbs(
    op: str, link: str, gpus: int, nodes: int, nbytes: float, profile: str | None = None
) -> Measured:
    """Achieved bus bandwidth (GB/s, as nccl-tests defines it) of one collective over `gpus` GPUs on `nodes`
    servers joined by `link` (link_key()), for a message of `nbytes` (nccl-tests' size)."""
    _check("op", op, COLLECTIVE_OPS)
    _positive(gpus=gpus, nodes=nodes, nbytes=nbytes)
    if gpus < 2:
        return Measured(math.inf, "one GPU: nothing crosses a link", "measured", 0.0)
    for candidate in (op, *OP_PROXIES[op]):
        got = _collective_own(candidate, link, gpus, nodes, nbytes, profile)
        if got is not None:
            if candidate == op:
                return got
            return Measured(
                got.value, got.source, f"scaled from {link} {candidate}", got.spread + SCALED_SPREAD
            )
    return _collective_fallback(op, link, gpus, nodes, nbytes)


def _collective_own(
    op: str, link: str, gpus: int, nodes: int, nbytes: float, profile: str | None
) -> Measured | None:
    """The rows of one op on one link: the asked number of servers, else the nearest measured one."""
    grid, origin = _grids("collectives", (op, link, float(nodes)), profile)
    extra = 0.0
    if grid is None:
        measured_nodes = sorted(
            {
                r["nodes"]
                for r in _rows("collectives", profile, None)[0]
                if r["op"] == op and r["link"] == link
            }
        )
        if not measured_nodes:
            return None
        near = min(measured_nodes, key=lambda x: (abs(math.log(x / nodes)), x))
        grid, origin = _grids("collectives", (op, link, near), profile)
        extra = EXTRAPOLATED_SPREAD + EXTRA_PER_DOUBLING * abs(math.log2(near / nodes))
        if grid is None:
            return None
    got = _measured(grid, origin, (float(gpus), float(nbytes)))
    if not extra:
        return got
    return Measured(got.value, got.source, "extrapolated", min(MAX_SPREAD, got.spread + extra))


def _collective_fallback(op: str, link: str, gpus: int, nodes: int, nbytes: float) -> Measured:
    """A link without rows: the measured link of its kind (inside a server, or between servers) with the
    nearest nominal bandwidth, scaled by the nominal ratio; else its nominal bandwidth times the median
    achieved/nominal ratio of the measured links."""
    mine = nominal_gbs(link)
    peer = _nearest_link(link) if mine else None
    if peer is not None and mine:
        for candidate in (op, *OP_PROXIES[op]):
            got = _collective_own(candidate, peer, gpus, nodes, nbytes, None)
            nominal = nominal_gbs(peer)
            if got is not None and nominal:
                basis = f"scaled from {peer}" + ("" if candidate == op else f" {candidate}")
                return Measured(got.value * mine / nominal, got.source, basis, got.spread + SCALED_SPREAD)
    ratios = []
    for other in sorted({r["link"] for r in table("collectives")}):
        nominal = nominal_gbs(other) if other != link else None
        for candidate in (op, *OP_PROXIES[op]):
            got = _collective_own(
                candidate, other, gpus, 1 if other.startswith(("nvlink", "pcie")) else nodes, nbytes, None
            )
            if got is not None and nominal:
                ratios.append(got.value / nominal)
                break
    if mine is None or not ratios:
        known = ", ".join(sorted(_link_nominals()))
        raise InputError(
            f"link {link!r} is not a known link key (known: {known})",
            field="link",
            value=link,
            problem="is not a known link",
            accepted=known,
        )
    nominal_of = _link_nominals()[link][1]
    source = f"{link} nominal {mine:g} GB/s ({nominal_of}) x median achieved/nominal of {len(ratios)} links"
    return Measured(mine * statistics.median(ratios), source, "datasheet fallback", FALLBACK_SPREAD)


def _between_servers(link: str) -> bool:
    return link.startswith(("ib-", "roce-", "eth-", "efa-"))


def _family(link: str) -> str:
    return (
        "network" if _between_servers(link) else link.rstrip("0123456789").split("-")[0].rstrip("0123456789")
    )


def _nearest_link(link: str) -> str | None:
    """The measured link of the same family (NVLink, PCIe, Infinity Fabric, network) with the nearest nominal
    bandwidth, else of the same kind (inside a server or between servers)."""
    mine = nominal_gbs(link) or 1.0
    measured = sorted({r["link"] for r in table("collectives")} - {link})
    same_kind = [x for x in measured if _between_servers(x) == _between_servers(link) and nominal_gbs(x)]
    if not same_kind:
        return None
    return min(
        same_kind,
        key=lambda x: (_family(x) != _family(link), abs(math.log((nominal_gbs(x) or 1.0) / mine)), x),
    )


# Nominal one-direction bandwidth per GPU of the links outside the catalogue's GPU entries, GB/s: PCIe x16
# per direction (knowledge/assumptions.toml [comm]) and network rails per GPU (assumptions.toml [fabric]; a
# per-node figure is shared by the 8 GPUs of a node).
# NVLink and Infinity Fabric keys take half the catalogue's per-GPU both-directions figure (nominal_gbs).
LINK_NOMINAL_GBS: dict[str, tuple[float, str]] = {
    "efa-400": (50.0, "EFA 400 Gb/s per GPU (AWS P5en, P6-B200: 8x 50 GB/s per node, stas00/ml-engineering)"),
    "pcie3": (15.75, "assumptions.toml comm.pcie_gen3_gbs"),
    "pcie4": (31.5, "assumptions.toml comm.pcie_gen4_gbs"),
    "pcie5": (63.0, "assumptions.toml comm.pcie_gen5_gbs"),
    "ib-hdr200": (25.0, "assumptions.toml fabric.ib-hdr: 200 Gb/s per GPU"),
    "ib-ndr400": (50.0, "assumptions.toml fabric.ib-ndr: 400 Gb/s per GPU"),
    "roce-200": (25.0, "assumptions.toml fabric.roce-200: 200 Gb/s per GPU"),
    "eth-100": (
        1.5625,
        "assumptions.toml fabric.eth-100: 100 Gb/s per node, an eighth per GPU of an 8-GPU node",
    ),
}


@functools.cache
def _link_nominals() -> dict[str, tuple[float, str]]:
    out = dict(LINK_NOMINAL_GBS)
    for g in _catalogue():
        key = link_key(g, across_nodes=False)
        if key not in LINK_NOMINAL_GBS and g.interconnect.gbs:
            half = g.interconnect.gbs / 2
            if key not in out or half > out[key][0]:
                out[key] = (
                    half,
                    f"gpus.toml {g.id} interconnect {g.interconnect.gbs:g} GB/s both directions / 2",
                )
    return out


def nominal_gbs(link: str) -> float | None:
    """A link key's nominal one-direction bandwidth per GPU (None: not a known key)."""
    found = _link_nominals().get(link)
    return found[0] if found else None


def link_key(gpu: str | Gpu, *, across_nodes: bool, fabric: str | None = None) -> str:
    """The link key of a GPU's traffic inside its server (across_nodes False) or between servers: the fabric
    key of knowledge/assumptions.toml (`fabric`, else the GPU's default) mapped to its measured-row key. A
    rack whose NVLink domain spans servers (GB200 NVL72) keeps NVLink across them."""
    g = _gpu(gpu) if isinstance(gpu, str) else gpu
    ic = g.interconnect
    if across_nodes and not (ic.kind == "nvswitch" and ic.domain > g.gpus_per_node):
        key = fabric or g.fabric
        return FABRIC_LINKS.get(key, key)
    generation = NVLINK_GENERATION.get(g.architecture)
    if ic.kind in ("nvswitch", "nvlink-mesh") and generation:
        return f"nvlink{generation}"
    if ic.kind == "nvlink-bridge" and generation:
        return f"nvlink{generation}-bridge"
    if ic.kind == "infinity-fabric":
        return "xgmi"
    return f"pcie{g.pcie_gen or 4}"
