"""Provides the shipped operation tables' grids precompiled into the knowledge cache, one entry per table and
GPU: a command reads the grids of the GPUs it asks instead of parsing the rows and filling the grids again."""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from advisor.catalog.operations.grid import Grid

Groups = Mapping[tuple[Any, ...], Grid | None]
"""A table part's groups: (kind, *the group's key) -> its grid (None: too few points for one)."""

# The code that derives a stored entry: an edit to any of them must not read entries it did not write.
DERIVED_BY = ("tables.py", "grid.py", "stored.py", "attention.py", "links.py", "rates.py")


def stored_groups(
    table: str, part: str, build: Callable[[], Iterable[tuple[tuple[Any, ...], Grid | None]]]
) -> Groups | None:
    """The groups of one part of a shipped table (a GPU's rows; "" for a table not split by GPU), from the
    knowledge cache or built by `build` and cached; None without a cache folder (grids are built on use)."""
    from advisor.catalog.common import shipped_root
    from advisor.catalog.loader import cached_part

    def encoded() -> list[Any]:
        return [[list(key), None if grid is None else _encode(grid)] for key, grid in build()]

    entries = cached_part(shipped_root(), f"operations/{table}.csv", part, _salt(), encoded)
    if entries is None:
        return None
    return _Decoded({tuple(key): raw for key, raw in entries})


class _Decoded(Mapping[tuple[Any, ...], Grid | None]):
    """A part's stored groups, each grid decoded when first asked: a command asks a few of a GPU's groups
    (a 7B predict decoded 56 grids and read 8)."""

    __slots__ = ("_grids", "_raw")

    def __init__(self, raw: dict[tuple[Any, ...], Any]) -> None:
        self._raw = raw
        self._grids: dict[tuple[Any, ...], Grid | None] = {}

    def __getitem__(self, key: tuple[Any, ...]) -> Grid | None:
        if key not in self._grids:
            raw = self._raw[key]
            self._grids[key] = None if raw is None else _decode(raw)
        return self._grids[key]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def stored_gpus(table: str, build: Callable[[], Iterable[str]]) -> tuple[str, ...] | None:
    """The GPUs with rows in a shipped table (`build` lists them from the rows), from the knowledge cache;
    None without a cache folder."""
    gpus = stored_value(table, "index", lambda: list(build()))
    return None if gpus is None else tuple(gpus)


def stored_value(table: str, part: str, build: Callable[[], Any]) -> Any:
    """What `build` derives from a whole shipped table (plain JSON data: a median over its rows, each link's
    plateau), from the knowledge cache; None without a cache folder."""
    from advisor.catalog.common import shipped_root
    from advisor.catalog.loader import cached_part

    return cached_part(shipped_root(), f"operations/{table}.csv", part, _salt(), build)


@functools.cache
def _salt() -> bytes:
    here, text = Path(__file__).parent, b""
    for name in DERIVED_BY:
        # An installation without sources: the file's digest and the package's schema key still key it.
        with contextlib.suppress(OSError):
            text += (here / name).read_bytes()
    return text


def _encode(grid: Grid) -> list[Any]:
    """A grid as JSON: its axes, measured points and the log values it filled (the measured points' logs
    are their values' logs, worked out again on reading: the same floats)."""
    filled = [[*p, v] for p, v in grid.logs.items() if p not in grid.points]
    points = [[*p, v] for p, v in grid.points.items()]
    return [[list(a) for a in grid.axes], points, filled, grid.source, list(grid.below)]


def _decode(raw: list[Any]) -> Grid:
    axes, points, filled, source, below = raw
    measured = {tuple(p[:-1]): p[-1] for p in points}
    logs = {p: math.log(v) for p, v in measured.items()}
    logs.update((tuple(p[:-1]), p[-1]) for p in filled)
    return Grid(tuple(tuple(a) for a in axes), measured, logs, source, tuple(below))
