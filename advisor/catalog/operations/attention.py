"""Provides attention TFLOP/s (FlashAttention's FLOP count) by pass, causality, kernel, heads and sequence."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from advisor.catalog.operations.grid import EXTRAPOLATED_SPREAD, PROXY_HEADS_SPREAD, SCALED_SPREAD
from advisor.catalog.operations.rates import DTYPES, _rate
from advisor.catalog.operations.stored import stored_value
from advisor.catalog.operations.tables import (
    GROUPS,
    Measured,
    _catalogue,
    _check,
    _gpu,
    _grids,
    _measured,
    _positive,
    _rows,
    _short,
    shipped_keys,
    table,
)

ATTENTION_PASSES = ("fwd", "bwd", "fwd_bwd")
KERNELS = ("fa3", "fa2", "cudnn", "sdpa", "triton", "other")


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


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _AttentionQuery:
    """What one attention lookup matches rows on: the pass, causality, kernel and head shape."""

    pass_: str
    causal: bool
    kernel: str | None
    head_dim: float
    heads: float
    kv_heads: float


@functools.lru_cache(maxsize=256)
def _attention_keys(gpu: str, profile: str | None) -> tuple[tuple[Any, ...], ...]:
    rows, origin = _rows("attention", profile, gpu) if profile else ((), "")
    if not origin:
        return tuple(sorted(set(shipped_keys("attention", gpu)), key=str))
    cols = GROUPS["attention"].key
    return tuple(sorted({tuple(r[c] for c in cols) for r in rows}, key=str))


def attention_kernels(gpu: str, profile: str | None = None) -> frozenset[str]:
    """The attention kernels a GPU's rows measured (a profile's and the shipped ones)."""
    keys = _attention_keys(gpu, profile)
    shipped = _attention_keys(gpu, None) if profile else ()
    return frozenset(k[2] for k in (*keys, *shipped))


@functools.lru_cache(maxsize=256)
def kernel_peer(gpu: str, kernel: str, profile: str | None = None) -> tuple[str, str] | None:
    """For a GPU whose rows lack `kernel`: a GPU of the same architecture whose rows hold both that kernel and
    the one this GPU's rows answer with (the first of KERNELS it has), and that kernel: (peer, kernel)."""
    mine = attention_kernels(gpu, profile)
    if kernel in mine or not mine:
        return None
    default = next(k for k in KERNELS if k in mine)
    g = _gpu(gpu)
    for other in _catalogue():
        same = other.id != gpu and other.architecture == g.architecture and other.vendor == g.vendor
        if same and {kernel, default} <= attention_kernels(other.id):
            return other.id, default
    return None


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
    basis = got.basis
    if key[4] != want.causal or (want.kernel is not None and key[2] != want.kernel):
        # Another kernel or causality than asked: outside what was measured for the question.
        basis = "extrapolated"
    elif extra and basis == "measured":
        basis = "interpolated"  # the nearest head configuration's row
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
    stored = _stored_pass_ratios()
    if stored is not None and (have, want, dtype) in stored:
        return stored[(have, want, dtype)]
    return _pass_ratio_of(have, want, dtype)


@functools.cache
def _stored_pass_ratios() -> dict[tuple[str, str, str], float | None] | None:
    """Every pass ratio of every dtype, from the knowledge cache (None: no cache)."""

    def build() -> list[list[Any]]:
        passes = ATTENTION_PASSES
        return [[h, w, d, _pass_ratio_of(h, w, d)] for h in passes for w in passes for d in DTYPES if h != w]

    stored = stored_value("attention", "pass_ratios", build)
    return None if stored is None else {(h, w, d): ratio for h, w, d, ratio in stored}


def _pass_ratio_of(have: str, want: str, dtype: str) -> float | None:
    import statistics  # on use: the statistics module costs more to import than most commands use it

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
