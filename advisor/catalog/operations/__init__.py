"""Provides measured operation speeds (GEMM, attention, memory bandwidth, collectives) from
knowledge/operations/*.csv or a node profile: interpolated in the measured grid, extrapolated and fallen back
to transparently (every answer says its basis, source and extra uncertainty). docs/operations-data.md."""

from __future__ import annotations

from advisor.catalog.operations import attention, links, rates, tables
from advisor.catalog.operations.attention import ATTENTION_PASSES, KERNELS, attention_tflops
from advisor.catalog.operations.grid import (
    EXTRA_PER_DOUBLING,
    EXTRAPOLATED_SPREAD,
    FALLBACK_SPREAD,
    MAX_SPREAD,
    PROXY_HEADS_SPREAD,
    SCALED_SPREAD,
    Grid,
)
from advisor.catalog.operations.links import (
    COLLECTIVE_OPS,
    best_busbw_gbs,
    collective_busbw_gbs,
    link_key,
    nominal_gbs,
)
from advisor.catalog.operations.rates import DTYPES, gemm_curve, gemm_tflops, grid_tflops, memory_gbs
from advisor.catalog.operations.tables import Measured, peak_tflops, table

__all__ = [
    "ATTENTION_PASSES",
    "COLLECTIVE_OPS",
    "DTYPES",
    "EXTRAPOLATED_SPREAD",
    "EXTRA_PER_DOUBLING",
    "FALLBACK_SPREAD",
    "KERNELS",
    "MAX_SPREAD",
    "PROXY_HEADS_SPREAD",
    "SCALED_SPREAD",
    "Grid",
    "Measured",
    "attention_tflops",
    "best_busbw_gbs",
    "clear_cache",
    "collective_busbw_gbs",
    "gemm_curve",
    "gemm_tflops",
    "grid_tflops",
    "link_key",
    "memory_gbs",
    "nominal_gbs",
    "peak_tflops",
    "table",
]


def clear_cache() -> None:
    """Forget what was read and computed (a test, a profile saved in this process)."""
    for module in (tables, rates, attention, links):
        for value in vars(module).values():
            if (
                callable(getattr(value, "cache_clear", None))
                and getattr(value, "__module__", "") == module.__name__
            ):
                value.cache_clear()
    rates._MEDIANS.clear()
    rates._RATIOS.clear()
