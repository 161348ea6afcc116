"""Provides BestPrices: the measured-operation tables at the best rate any micro-batch reaches, so that a
step composed on them is a lower bound of the step at every micro-batch (what a search may prune on)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from advisor.physics.op_prices import OpPrices, Price

# A GEMM's dimension that grows with the micro-batch: its rate is looked for at one sequence's size and at
# every power of two above it up to 2^24 (the shipped grids sit at powers of two; between grid points a rate
# is interpolated, so its largest value over any micro-batch is at one of them or at one sequence's size:
# exact for the shipped tables, close for a profile measured elsewhere). Attention, eager attention's
# batched GEMMs and memory-bound operations are taken at the datasheet peak and bandwidth, which no table
# answer passes.
POWERS = tuple(2**j for j in range(25))
FREE = Price(0.0, "", "lower bound")


@functools.lru_cache(maxsize=1 << 14)
def _best_tflops(
    gpu: str,
    dtype: str,
    fixed: tuple[int, int],
    at: int,
    base: int,
    profile: str | None,
    sweep: bool = True,
) -> float:
    """The highest TFLOP/s the tables give a GEMM whose dimension `at` (0: m, 2: k) is `base` or more and the
    other two are `fixed`, over `base` and every power of two above it (read once per process). A GPU whose
    rate is an increasing function of one grid's (gemm_curve: its own, or a peer's scaled) takes it at that
    grid's best size, found once for every GPU on the grid."""
    from advisor.catalog import operations

    curve = operations.gemm_curve(gpu, dtype, profile) if sweep else None
    if curve is not None:
        x = _best_size(curve, fixed, at, base)
        dims = (x, *fixed) if at == 0 else (*fixed, x)
        return float(operations.gemm_tflops(gpu, dtype, *dims, profile=profile).value)

    def rate(dims: tuple[int, int, int]) -> float:
        return float(operations.gemm_tflops(gpu, dtype, *dims, profile=profile).value)

    return max(_sweep(rate, fixed, at, base, sweep))


@functools.lru_cache(maxsize=1 << 14)
def _best_size(curve: tuple[str, str, str | None], fixed: tuple[int, int], at: int, base: int) -> int:
    """The size of the dimension `at` (`base` or a power of two above it) where a grid's rate is highest."""
    from advisor.catalog import operations

    def rate(dims: tuple[int, int, int]) -> float:
        return float(operations.grid_tflops(curve, *dims))

    values = _sweep(rate, fixed, at, base, True)
    sizes = (base, *(p for p in POWERS if p > base))
    return sizes[values.index(max(values))]


def _sweep(
    rate: Callable[[tuple[int, int, int]], float], fixed: tuple[int, int], at: int, base: int, sweep: bool
) -> list[float]:
    """The rates at `base` and each power of two above it, in order, until the rate is held: past a grid's
    last point two equal steps in a row end the sweep."""
    out: list[float] = []
    last, same = -1.0, 0
    for x in (base, *(p for p in POWERS if p > base)) if sweep else (base,):
        value = rate((x, *fixed) if at == 0 else (*fixed, x))
        out.append(value)
        same = same + 1 if value == last else 0
        if same >= 2:
            break
        last = value
    return out


class BestPrices:
    """OpPrices at each operation's best rate over the micro-batch (the tokens of one sequence in `scales`:
    the GEMM dimension that grows with the micro-batch); collectives are free (a compute bound)."""

    def __init__(self, prices: OpPrices, scales: frozenset[int]) -> None:
        self.prices, self.scales = prices, scales
        self.gpu, self.fabric, self.profile = prices.gpu, prices.fabric, prices.profile
        self._gemm: dict[tuple[object, ...], Price] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.prices, name)  # peak_flops, link, ...: as the tables'

    def gemm(self, dtype: str, m: int, n: int, k: int) -> Price:
        """The GEMM at the best rate the tables give the dimension that grows with the micro-batch."""
        key = (dtype, m, n, k)
        got = self._gemm.get(key)
        if got is None:
            flops = 2.0 * m * n * k
            peak = self.prices.peak_flops(dtype)
            if m in self.scales:
                rate = _best_tflops(self.gpu.id, dtype, (n, k), 0, m, self.profile)
            elif k in self.scales:
                rate = _best_tflops(self.gpu.id, dtype, (m, n), 2, k, self.profile)
            else:
                rate = _best_tflops(self.gpu.id, dtype, (n, k), 0, m, self.profile, sweep=False)
            got = self._gemm[key] = Price(flops / min(rate * 1e12, peak), "", "lower bound")
        return got

    def thin_gemm(self, dtype: str, m: int, n: int, k: int, value_bytes: float) -> Price:
        """Eager attention's batched GEMMs at the datasheet peak."""
        return Price(2.0 * m * n * k / self.prices.peak_flops(dtype), "", "lower bound")

    def attention(
        self, dtype: str, seq: int, heads: int, kv_heads: int, head_dim: int, batch: int
    ) -> tuple[Price, Price]:
        """Forward and backward at the datasheet peak (FlashAttention's FLOPs: 4 b s^2 h d, halved when
        causal; backward 2.5x)."""
        fwd = 4.0 * batch * seq * seq * heads * head_dim / 2.0 / self.prices.peak_flops(dtype)
        return Price(fwd, "", "lower bound"), Price(2.5 * fwd, "", "lower bound")

    def memory(self, nbytes: float, stream: float | None = None) -> Price:
        """Bytes at the datasheet bandwidth (no table answer passes it)."""
        return Price(nbytes / (self.gpu.memory_bw_gbs * 1e9), "", "lower bound")

    def collective(self, op: str, gpus: int, nodes: int, nbytes: float) -> Price:
        return FREE

    def in_server(self, op: str, gpus: int, nbytes: float) -> Price:
        return FREE
