"""Provides OpPrices: the measured-operation tables (advisor/catalog/operations.py) as seconds per operation,
memoised per GPU, precision and shape, each with the source and basis of its figure."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.catalog.gpus import Gpu

TFLOP = 1e12
GBS = 1e9
# The message sizes a collective's best bus bandwidth is looked for over (1 B to 1 TiB): the search's
# lower bound prices tensor-parallel traffic at the fastest the link achieves at any size.
# The smallest GEMM width (k, n) every GPU's table holds (knowledge/operations/gemm.csv).
THIN_EDGE = 1024
# FlashAttention-2's backward pass against its forward on A100: up to 63% of peak against up to 73% (Dao,
# "FlashAttention-2", arXiv:2307.08691, sec. 4.1): what a backward rate the tables lack is taken at.
BWD_OVER_FWD = 63.0 / 73.0
_SWEEP = tuple(2.0 ** (e / 4.0) for e in range(161))
# The sizes busbw() asks the tables for over the sweep (its quarter-octave buckets).
_SIZES = tuple(2.0 ** (round(math.log2(max(s, 1.0)) * 4.0) / 4.0) for s in _SWEEP)
# The PCIe server whose NCCL rows ran peer-to-peer (aiconfigurator's RTX PRO 6000 server: all-reduce busbw
# 20-36 GB/s from 2 to 8 GPUs). The PCIe 4 rows are one L40S server whose busbw falls from 20 GB/s at 2 GPUs
# to 5 at 4 and 1.5 at 8 (it likely crosses sockets without peer-to-peer: knowledge/operations/README.md). A
# PCIe board's collective inside one server is the faster of its own link's rows and these rows at its link's
# nominal bandwidth, as serving prices its all-reduces (advisor/physics/serving_ops.py, P2P_LINK).
P2P_PCIE = "pcie5"


@dataclass(frozen=True, slots=True, repr=False)
class Price:
    """One operation's time and where its rate came from."""

    seconds: float
    source: str
    basis: str


_OPERATIONS: list[Any] = []


def _ops() -> Any:
    # Imported on first use (the tables are read lazily by the loader itself, and a CNN never asks), then
    # kept: a search asks thousands of times.
    if not _OPERATIONS:
        from advisor.catalog import operations

        _OPERATIONS.append(operations)
    return _OPERATIONS[0]


def attention_dtype(precision: str) -> str:
    """Attention runs in 16-bit under FP8 training (Transformer Engine keeps the attention core in BF16)."""
    if precision in ("fp8", "int8", "int4"):
        return "bf16"
    return precision


def gemm_dtype(precision: str) -> str:
    """The dtype whose GEMM table prices a training precision (int formats train in 16-bit)."""
    return "bf16" if precision in ("int8", "int4") else precision


class OpPrices:
    """Seconds of GEMMs, attention passes, memory traffic and collectives on one GPU type (and the user's node
    profile, when given), each figure memoised: a search asks for the same shapes for thousands of layouts.
    `fabric` is the key of knowledge/assumptions.toml [fabric.*]."""

    def __init__(
        self, gpu: Gpu, fabric: str, profile: str | None = None, attention_kernel: str | None = None
    ) -> None:
        self.gpu, self.fabric, self.profile = gpu, fabric, profile
        # The stack's attention kernel where this GPU's rows measured it; else the rows it has, scaled by the
        # two kernels' ratio on a GPU of its architecture that measured both (else the tables' own order).
        kernels = _ops().attention.attention_kernels(gpu.id, profile) if attention_kernel else ()
        self.kernel = attention_kernel if attention_kernel in kernels else None
        self.kernel_peer = (
            _ops().attention.kernel_peer(gpu.id, attention_kernel, profile)
            if attention_kernel and self.kernel is None
            else None
        )
        self.wanted_kernel = attention_kernel
        self.peak: dict[str, float] = {}
        self._gemm: dict[tuple[object, ...], Price] = {}
        self._attn: dict[tuple[Any, ...], tuple[Price, Price]] = {}
        self._bw: dict[float, tuple[float, str, str]] = {}
        self._coll: dict[tuple[Any, ...], tuple[float, str, str]] = {}
        self._links: dict[bool, str] = {}
        self._best: dict[tuple[str, str, int, int], float] = {}

    def peak_flops(self, dtype: str) -> float:
        """The datasheet dense peak (FLOP/s) of a dtype: no measured rate may exceed it."""
        got = self.peak.get(dtype)
        if got is None:
            got = self.peak[dtype] = (
                self.gpu.peak_tflops(dtype) or self.gpu.peak_tflops("fp16") or 1.0
            ) * TFLOP
        return got

    def gemm(self, dtype: str, m: int, n: int, k: int) -> Price:
        """C[m, n] = A[m, k] B[k, n] at the measured rate for that shape (never above the peak)."""
        key = (dtype, m, n, k)
        got = self._gemm.get(key)
        if got is None:
            r = _ops().gemm_tflops(self.gpu.id, dtype, max(m, 1), max(n, 1), max(k, 1), profile=self.profile)
            rate = min(r.value * TFLOP, self.peak_flops(dtype))
            got = self._gemm[key] = Price(2.0 * m * n * k / rate, r.source, r.basis)
        return got

    def thin_gemm(self, dtype: str, m: int, n: int, k: int, value_bytes: float) -> Price:
        """A GEMM with a head-sized side (eager attention's batched QK^T and PV): the tables' rate at the
        smallest measured width (THIN_EDGE; below it the tables scale the rate down in proportion, which a
        batched kernel over thousands of heads does not), bounded by the memory its operands move."""
        key = ("thin", m, n, k, value_bytes)
        got = self._gemm.get(key)
        if got is None:
            wn, wk = max(n, THIN_EDGE), max(k, THIN_EDGE)
            wide = self.gemm(dtype, m, wn, wk)
            rate = 2.0 * m * wn * wk / wide.seconds
            traffic = self.memory((m * k + k * n + m * n) * value_bytes)
            seconds = max(2.0 * m * n * k / rate, traffic.seconds)
            got = self._gemm[key] = Price(seconds, wide.source, f"{wide.basis} at width {THIN_EDGE}")
        return got

    def attention(
        self, dtype: str, seq: int, heads: int, kv_heads: int, head_dim: int, batch: int
    ) -> tuple[Price, Price]:
        """Causal FlashAttention forward and backward of one micro-batch, FLOPs counted as FlashAttention
        counts them (4 b s^2 h d forward, halved when causal; backward 2.5x forward)."""
        key = (dtype, seq, heads, kv_heads, head_dim, batch)
        got = self._attn.get(key)
        if got is None:
            fwd_flops = 4.0 * batch * seq * seq * heads * head_dim / 2.0
            out = []
            for pass_, flops in (("fwd", fwd_flops), ("bwd", 2.5 * fwd_flops)):
                value, source, basis = self._attention_rate(
                    dtype, seq, heads, kv_heads, head_dim, batch, pass_
                )
                rate = min(value * TFLOP, self.peak_flops(dtype))
                out.append(Price(flops / rate, source, basis))
            got = self._attn[key] = (out[0], out[1])
        return got

    def _attention_rate(
        self, dtype: str, seq: int, heads: int, kv_heads: int, head_dim: int, batch: int, pass_: str
    ) -> tuple[float, str, str]:
        """The tables' TFLOP/s of one pass (at the stack's kernel, measured or by a peer's kernel ratio); a
        backward pass they lack is the forward's at BWD_OVER_FWD."""

        def ask(which: str, gpu: str | None = None, kernel: str | None = None, causal: bool = True) -> Any:
            return _ops().attention_tflops(
                gpu or self.gpu.id,
                dtype,
                seq_len=seq,
                heads=heads,
                kv_heads=kv_heads,
                head_dim=head_dim,
                causal=causal,
                pass_=which,
                batch=batch,
                kernel=kernel if gpu else self.kernel,
                profile=self.profile,
            )

        try:
            r = ask(pass_)
        except LookupError:
            if pass_ != "bwd":
                raise
            r = ask("fwd")
            return (
                r.value * BWD_OVER_FWD,
                r.source,
                f"{r.basis} fwd x {BWD_OVER_FWD:.2f} (FlashAttention-2 bwd/fwd)",
            )
        value, basis = r.value, r.basis
        if pass_ == "bwd":
            value, basis = self._causal_backward(ask, value, basis)
        if self.kernel_peer is not None and self.wanted_kernel:
            peer, default = self.kernel_peer
            ratio = ask(pass_, peer, self.wanted_kernel).value / ask(pass_, peer, default).value
            basis = f"{basis} x {self.wanted_kernel}/{default} on {peer}"
            return value * ratio, r.source, basis
        return value, r.source, basis

    @staticmethod
    def _causal_backward(ask: Callable[..., Any], value: float, basis: str) -> tuple[float, str]:
        """A causal backward pass the rows measured only without the mask (the FlashAttention-3 paper's
        backward figures are non-causal): the non-causal rate x the forward's causal/non-causal ratio measured
        at the same shape and kernel. A causal pass skips the masked blocks but pays for the diagonal ones
        and an uneven split of the work across thread blocks, in the backward as in the forward (Dao,
        FlashAttention-2, arXiv:2307.08691 sec. 3.1.1 and 3.2); at short sequences the diagonal blocks
        weigh most (H100, FlashAttention-2, head dim 128: 0.62 at 512 tokens, 0.90 at 8k)."""
        try:
            open_ = ask("bwd", causal=False).value
            if not math.isclose(open_, value, rel_tol=1e-9):
                return value, basis  # causal backward rows were measured: they answered
            ratio = ask("fwd").value / ask("fwd", causal=False).value
        except LookupError:
            return value, basis
        if not 0.0 < ratio < 1.0:
            return value, basis
        return value * ratio, f"{basis} x causal/non-causal fwd {ratio:.2f}"

    def bandwidth(self, nbytes: float) -> tuple[float, str, str]:
        """Achieved memory bandwidth (B/s) for streams of about this size, its source and basis."""
        bucket = round(math.log2(max(nbytes, 1.0)), 1)  # sizes within 7% share a figure
        got = self._bw.get(bucket)
        if got is None:
            r = _ops().memory_gbs(self.gpu.id, 2.0**bucket, profile=self.profile)
            got = self._bw[bucket] = (min(r.value, self.gpu.memory_bw_gbs) * GBS, r.source, r.basis)
        return got

    def memory(self, nbytes: float, stream: float | None = None) -> Price:
        """Seconds to move `nbytes` through HBM in streams of `stream` bytes (default: one stream)."""
        bw, source, basis = self.bandwidth(stream or nbytes)
        return Price(nbytes / bw, source, basis)

    def link(self, across_nodes: bool) -> str:
        """The fabric key of this GPU's in-server or cross-server traffic."""
        got = self._links.get(across_nodes)
        if got is None:
            got = self._links[across_nodes] = _ops().link_key(
                self.gpu, across_nodes=across_nodes, fabric=self.fabric
            )
        return got

    def busbw(self, op: str, gpus: int, nodes: int, nbytes: float) -> tuple[float, str, str]:
        """Measured bus bandwidth (B/s) of a collective of `nbytes` over `gpus` ranks on `nodes` servers."""
        bucket = round(math.log2(max(nbytes, 1.0)) * 4.0) / 4.0  # quarter octaves: the _SWEEP grid
        key = (op, gpus, nodes, bucket)
        got = self._coll.get(key)
        if got is None:
            r = _ops().collective_busbw_gbs(
                op, self.link(nodes > 1), gpus, nodes, 2.0**bucket, profile=self.profile
            )
            got = self._coll[key] = (max(r.value, 1e-3) * GBS, r.source, r.basis)
        return got

    def collective(self, op: str, gpus: int, nodes: int, nbytes: float) -> Price:
        """nccl-tests' time of one collective: all-reduce 2(n-1)/n bytes / busbw, all-gather, reduce-scatter
        and all-to-all (n-1)/n, send/recv the bytes."""
        if gpus <= 1 or nbytes <= 0:
            return Price(0.0, "", "measured")
        bw, source, basis = self.busbw(op, gpus, nodes, nbytes)
        factor = {"all_reduce": 2.0 * (gpus - 1) / gpus, "send_recv": 1.0}.get(op, (gpus - 1) / gpus)
        return Price(factor * nbytes / bw, source, basis)

    def deepep(self, pass_: str, ep: int, nodes: int, nbytes: float) -> Price:
        """One DeepEP dispatch or combine moving `nbytes` (a rank's tokens x the servers, or inside one server
        the ranks, each reaches, as DeepEP's tests count them) at its measured bottleneck bandwidth
        (knowledge/operations/ep_dispatch.csv), scaled down where this GPU's link is slower than the one
        measured (never up: the H800 rows run near their link's maximum)."""
        from advisor.catalog.operations.dispatch import dispatch_rate

        if ep <= 1 or nbytes <= 0:
            return Price(0.0, "", "measured")
        across = nodes > 1
        rate = dispatch_rate("deepep", pass_, ep, across)
        nominal = _ops().nominal_gbs(self.link(across)) or rate.link_max_gbs
        scale = min(1.0, nominal / rate.link_max_gbs)
        basis = "measured" if rate.ep == ep and scale == 1.0 else f"DeepEP EP {rate.ep} row x {scale:.2f}"
        return Price(nbytes / (rate.gbs * scale * GBS), rate.source, basis)

    def _p2p_scale(self) -> float | None:
        """This GPU's in-server link's nominal bandwidth over the peer-to-peer PCIe server's, where its link
        is another PCIe key and no node profile measured it (None: its own rows answer alone)."""
        link = self.link(False)
        if self.profile or not link.startswith("pcie") or link == P2P_PCIE:
            return None
        mine, p2p = _ops().nominal_gbs(link), _ops().nominal_gbs(P2P_PCIE)
        return mine / p2p if mine and p2p else None

    def in_server(self, op: str, gpus: int, nbytes: float) -> Price:
        """collective() among `gpus` GPUs of one server; on a PCIe board no slower than the peer-to-peer PCIe
        server's measured rate at its link's nominal bandwidth (P2P_PCIE)."""
        got = self.collective(op, gpus, 1, nbytes)
        scale = self._p2p_scale()
        if scale is None or got.seconds <= 0:
            return got
        bucket = round(math.log2(max(nbytes, 1.0)) * 4.0) / 4.0
        r = _ops().collective_busbw_gbs(op, P2P_PCIE, gpus, 1, 2.0**bucket)
        factor = {"all_reduce": 2.0 * (gpus - 1) / gpus, "send_recv": 1.0}.get(op, (gpus - 1) / gpus)
        seconds = factor * nbytes / (max(r.value, 1e-3) * GBS * scale)
        if seconds >= got.seconds:
            return got
        return Price(seconds, r.source, f"{r.basis} ({P2P_PCIE} peer-to-peer rows x {scale:.2f} nominal)")

    def best_in_server(self, op: str, gpus: int) -> float:
        """best_busbw() of a collective inside one server, with in_server()'s peer-to-peer PCIe rate: what a
        lower bound of in_server()'s time may assume."""
        best = self.best_busbw(op, gpus, 1)
        scale = self._p2p_scale()
        if scale is None:
            return best
        stored = _ops().best_busbw_gbs(op, P2P_PCIE, gpus, _SIZES)
        if stored is None:
            sizes = sorted(set(_SIZES))
            stored = max(_ops().collective_busbw_gbs(op, P2P_PCIE, gpus, 1, s).value for s in sizes)
        return max(best, max(stored, 1e-3) * GBS * scale)

    def best_busbw(self, op: str, gpus: int, nodes: int) -> float:
        """The highest bus bandwidth (B/s) the tables give this collective at any message size: what a lower
        bound of its time may assume."""
        key = (op, self.link(nodes > 1), gpus, nodes)
        got = self._best.get(key)
        if got is None:
            # Inside a server on the shipped rows, the sweep's best is read from the knowledge cache: the
            # same figure (max(x, 1e-3) * GBS keeps the order of the values, so it commutes with max()).
            stored = None if self.profile or nodes > 1 else _ops().best_busbw_gbs(op, key[1], gpus, _SIZES)
            if stored is not None:
                got = self._best[key] = max(stored, 1e-3) * GBS
            else:
                got = self._best[key] = max(self.busbw(op, gpus, nodes, s)[0] for s in _SWEEP)
        return got
