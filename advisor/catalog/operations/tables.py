"""Provides the measured-operation rows (knowledge/operations/*.csv, a node profile), their grids by group
and the Measured answer record."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.catalog.operations.grid import Grid
from advisor.catalog.operations.stored import Groups, stored_gpus, stored_groups
from advisor.question.errors import InputError

if TYPE_CHECKING:
    from advisor.catalog.gpus import Gpu
    from advisor.catalog.loader import Knowledge


@dataclass(frozen=True, slots=True, repr=False, eq=False)
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
    import csv  # on use: a warm command reads the stored grids, not the rows

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
    return _parse(name, _lines_by_gpu(name).get(gpu, ()))


@functools.cache
def _lines_by_gpu(name: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in _lines(name)[1]:
        out.setdefault(line.split(",", 1)[0], []).append(line)
    return out


def _profile_payload(name: str) -> dict[str, Any]:
    """A node profile's payload ({"gpu", "gemm": [rows], ...}); InputError when there is none of that name."""
    try:
        from advisor.catalog.node_profile import load_operations  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # the probe's module is not in this build: read the file as it is written
        load_operations = _read_profile_file
    payload = load_operations(name)
    if payload is None and _has_folder(name):
        return {}  # a profile of calibration runs only (issue 27): no node rows, the shipped tables answer
    if payload is None:
        raise InputError(
            f"profile {name!r}: no node profile of that name (`gpu-advisor probe` on the node saves one)",
            field="profile",
            value=name,
            problem="has no node profile",
            accepted="the name of a profile `gpu-advisor probe` saved",
        )
    return dict(payload)


def _has_folder(name: str) -> bool:
    """Whether a profile of that name exists at all (its calibration runs, if not its node tables)."""
    from advisor.catalog.userdata import data_dir

    return (data_dir() / "profiles" / name).is_dir()


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


def _grid(
    rows: Sequence[dict[str, Any]], axes: Sequence[str], value: str, below: Sequence[float], one_source: bool
) -> Grid | None:
    """The grid of a group's rows: every source merged, or (one_source) the source with the most rows, so that
    a sweep is not bent by one best-shape figure of another method; None below MIN_GRID_POINTS points, or
    for points on one slanted line of three or more axes."""
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
    if len(axes) >= 3 and _one_slanted_line(list(points)):
        return None
    return Grid.of(points, "; ".join(sources), below)


def _one_slanted_line(points: Sequence[tuple[float, ...]]) -> bool:
    """Whether measured points lie on one line along which several axes vary together (a square GEMM sweep,
    m = n = k): filling the axes' product from them would give a skinny shape (a decode GEMM) the time of a
    square one, so such rows level a curve whose shape comes from elsewhere rather than form a grid."""
    logs = [tuple(math.log(v) for v in p) for p in points]
    steps = [tuple(a - b for a, b in zip(p, logs[0], strict=True)) for p in logs[1:]]
    steps = [d for d in steps if any(abs(x) > 1e-9 for x in d)]
    if not steps:
        return False
    first = steps[0]
    if sum(abs(x) > 1e-9 for x in first) < 2:
        return False  # along one axis: the grid's rules for the other axes hold
    norm = math.sqrt(sum(x * x for x in first))
    unit = [x / norm for x in first]
    for d in steps[1:]:
        length = math.sqrt(sum(x * x for x in d))
        if abs(abs(sum(u * x for u, x in zip(unit, d, strict=True))) - length) > 1e-6 * max(1.0, length):
            return False
    return True


MIN_GRID_POINTS = 4
"""Fewer measured points than this (one best-shape figure) anchor a GPU's fallback rather than form a grid."""


@functools.lru_cache(maxsize=4096)
def _grids(kind: str, key: tuple[Any, ...], profile: str | None) -> tuple[Grid | None, str]:
    """The grid of one group of rows, keyed by kind and the group's columns; with the profile it came from."""
    spec = GROUPS[kind]
    if profile:
        rows, origin = _rows(spec.table, profile, key[0] if spec.per_gpu else None)
        if origin:
            grid = _grid(_matching(rows, spec, key), spec.axes, spec.value, spec.below, spec.one_source)
            if grid is None and kind != "gemm":
                # Too few profile points for a grid: the shipped rows (a GEMM's few rows level them instead).
                return _grids(kind, key, None)
            return grid, origin
    stored = _stored(spec.table, key[0] if spec.per_gpu else "")
    if stored is None:
        return _built(kind, key), ""
    return stored.get((kind, *key)), ""


def _matching(rows: Sequence[dict[str, Any]], spec: GroupSpec, key: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [r for r in rows if all(_same(r[c], v) for c, v in zip(spec.key, key, strict=True))]


def _built(kind: str, key: tuple[Any, ...]) -> Grid | None:
    """The grid of one group of the shipped rows, built from them."""
    spec = GROUPS[kind]
    if spec.per_gpu:
        mine = _matching(_gpu_rows(spec.table, key[0]), spec, key)
    else:
        mine = _shipped_groups(kind).get(tuple(_norm(v) for v in key), [])
    return _grid(mine, spec.axes, spec.value, spec.below, spec.one_source)


@functools.lru_cache(maxsize=256)
def _stored(table_name: str, part: str) -> Groups | None:
    """Every group of one GPU's shipped rows of a table (every group for a table not split by GPU) with its
    grid, precompiled in the knowledge cache (None: no cache, each grid is built on use). A GPU without rows
    has no groups and no entry."""
    if part and part not in _measured_gpus(table_name):
        return {}
    return stored_groups(table_name, part, functools.partial(_part_groups, table_name, part))


def _part_groups(table_name: str, part: str) -> list[tuple[tuple[Any, ...], Grid | None]]:
    """Every group of a table's part, keyed (kind, *key), with the grid _built() gives it."""
    out = []
    for kind, spec in GROUPS.items():
        if spec.table == table_name:
            rows = _gpu_rows(table_name, part) if spec.per_gpu else table(table_name)
            keys = dict.fromkeys(tuple(_norm(r[c]) for c in spec.key) for r in rows)
            out += [((kind, *key), _built(kind, key)) for key in keys]
    return out


@functools.cache
def _measured_gpus(table_name: str) -> tuple[str, ...]:
    """The GPUs with rows in a shipped table, in their first row's order (stored: a warm command reads no
    rows of the GPUs it does not ask)."""
    stored = stored_gpus(table_name, functools.partial(_lines_by_gpu, table_name))
    return stored if stored is not None else tuple(_lines_by_gpu(table_name))


def shipped_keys(kind: str, gpu: str = "") -> list[tuple[Any, ...]]:
    """The group keys of the shipped rows of a kind (of one GPU for a table split by GPU), in the rows'
    order."""
    spec = GROUPS[kind]
    stored = _stored(spec.table, gpu)
    if stored is None:
        rows = _gpu_rows(spec.table, gpu) if spec.per_gpu else table(spec.table)
        return list(dict.fromkeys(tuple(_norm(r[c]) for c in spec.key) for r in rows))
    return [key[1:] for key in stored if key[0] == kind]


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


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class GroupSpec:
    """How one measured table is grouped into interpolation grids: its key columns, axes and value."""

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
    # load_knowledge() asked every time (it is the process's one Knowledge): nothing here to go stale. Its
    # import is looked up once: an import statement in a function asked thousands of times per search cost
    # four times the lookup itself.
    return _loader()().gpu(name)


@functools.cache
def _loader() -> Callable[[], Knowledge]:
    from advisor.catalog.loader import load_knowledge  # on use: the loader imports the catalogue's modules

    return load_knowledge


def _catalogue() -> tuple[Gpu, ...]:
    from advisor.catalog.loader import load_knowledge

    return load_knowledge().gpus


def peak_tflops(gpu: Gpu, dtype: str) -> float | None:
    """The datasheet dense peak of knowledge/gpus.toml (None: not executed or not sourced)."""
    value = getattr(gpu.tflops, dtype, None)
    return float(value) if value else None


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
