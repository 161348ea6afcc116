"""Provides the probe's grid (which GEMM shapes, attention cases, copy sizes and collectives it times) and
the arithmetic that turns a measured time into TFLOP/s, GB/s or bus bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20

# C[m,n] = A[m,k] B[k,n]. m is the tokens of a micro-batch (decode-sized 256 to a long-sequence 16k); (n, k)
# are the projections of Llama-3-8B (hidden 4096, fused QKV 6144 with 8 KV heads, FFN 14336) and
# Llama-3-70B (hidden 8192, FFN 28672), both directions of each FFN matrix (up: n = ffn; down: k = ffn).
GEMM_M = (256, 1024, 4096, 8192, 16384)
GEMM_NK = (
    (4096, 4096),
    (6144, 4096),
    (14336, 4096),
    (4096, 14336),
    (8192, 8192),
    (28672, 8192),
    (8192, 28672),
)
QUICK_GEMM_M = (1024, 8192)
QUICK_GEMM_NK = ((4096, 4096), (14336, 4096), (8192, 8192))
# Attention as LLM training runs it: 16k tokens per batch, 32 heads, head dimension 64 and 128, causal, and
# one non-causal case (encoders, prefill without a mask) to show what the mask saves.
ATTENTION_TOKENS = 16384
ATTENTION_SEQ = (1024, 2048, 4096, 8192)
ATTENTION_HEAD_DIM = (64, 128)
QUICK_ATTENTION_SEQ = (2048, 8192)
HEADS = 32
GQA_KV_HEADS = 8
# Copies far larger than any L2 or Infinity Cache (50 MB on H100, 256 MB on MI300X), so DRAM is timed.
COPY_BYTES = (256 * MIB, 1024 * MIB, 4096 * MIB)
QUICK_COPY_BYTES = (1024 * MIB,)
# nccl-tests' default sweep points between 1 MB and 1 GB (powers of two, as its -f 2 steps).
COLLECTIVE_BYTES = tuple(MIB << s for s in range(0, 11, 2))  # 1, 4, 16, 64, 256, 1024 MiB
QUICK_COLLECTIVE_BYTES = (MIB, 32 * MIB, 1024 * MIB)
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
# nccl-tests doc/PERFORMANCE.md (NVIDIA/nccl-tests@03a204a1): busbw = algbw x this factor of the rank count
# n; send/recv (one message each way on a ring) counts the algorithm bandwidth as it is.
_BUSBW = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "send_recv": lambda n: 1.0,
}
ATTENTION_NOTE = (
    "FlashAttention's count: forward 4*b*s^2*h*d, halved when causal; bwd 2.5x and fwd_bwd 3.5x forward"
)


@dataclass(frozen=True, slots=True, repr=False)
class GemmCase:
    """One dense matmul C[m,n] = A[m,k] B[k,n]."""

    dtype: str
    m: int
    n: int
    k: int

    def flops(self) -> float:
        """Multiply-adds counted as two FLOPs."""
        return 2.0 * self.m * self.n * self.k


@dataclass(frozen=True, slots=True, repr=False)
class AttentionCase:
    """One scaled-dot-product attention call, q/k/v of shape (batch, heads, seq_len, head_dim)."""

    dtype: str
    batch: int
    seq_len: int
    heads: int
    kv_heads: int
    head_dim: int
    causal: bool

    def flops(self, pass_: str) -> float:
        """FlashAttention's convention (see ATTENTION_NOTE)."""
        forward = 4.0 * self.batch * self.seq_len**2 * self.heads * self.head_dim
        forward *= 0.5 if self.causal else 1.0
        return forward * {"fwd": 1.0, "bwd": 2.5, "fwd_bwd": 3.5}[pass_]


@dataclass(frozen=True, slots=True, repr=False)
class CollectiveCase:
    """One collective over the node's GPUs; nbytes is nccl-tests' size S (the whole gathered or scattered
    array for all_gather and reduce_scatter, each rank's buffer for the others)."""

    op: str
    nbytes: int


@dataclass(frozen=True, slots=True, repr=False)
class Plan:
    """What one probe run times, and how often."""

    gemm: tuple[GemmCase, ...]
    attention: tuple[AttentionCase, ...]
    copy_bytes: tuple[int, ...]
    collectives: tuple[CollectiveCase, ...]
    warmup: int
    repeats: int
    all_kernels: bool
    """Time attention with every SDPA backend that runs (else only the first that does)."""


def tflops(flops: float, seconds: float) -> float:
    """Achieved TFLOP/s of `flops` done in `seconds`."""
    return flops / seconds / 1e12


def copy_gbs(nbytes: int, seconds: float) -> float:
    """A device copy's bandwidth: its bytes read plus bytes written (STREAM's count), per second, in GB/s."""
    return 2.0 * nbytes / seconds / 1e9


def busbw_gbs(op: str, nbytes: int, ranks: int, seconds: float) -> float:
    """nccl-tests' bus bandwidth in GB/s: algbw = S / t, times the op's factor of the rank count."""
    return nbytes / seconds * _BUSBW[op](ranks) / 1e9


def split_bytes(nbytes: int, ranks: int) -> int:
    """nbytes rounded down to what splits evenly into `ranks` float32 chunks (each op divides S by rank)."""
    unit = 4 * ranks
    return max(unit, nbytes // unit * unit)


def build_plan(*, quick: bool, fp8: bool, memory_bytes: int) -> Plan:
    """The grid: bf16 and fp16 (fp8 too where the GPU runs it), a shorter one with quick. Copies larger
    than an eighth of the GPU's memory are left out (source, destination and headroom)."""
    dtypes = ("bf16", "fp16", "fp8") if fp8 else ("bf16", "fp16")
    ms, nks = (QUICK_GEMM_M, QUICK_GEMM_NK) if quick else (GEMM_M, GEMM_NK)
    gemm = tuple(GemmCase(d, m, n, k) for d in dtypes for m in ms for n, k in nks)
    seqs, dims = (QUICK_ATTENTION_SEQ, (128,)) if quick else (ATTENTION_SEQ, ATTENTION_HEAD_DIM)
    attention = [
        AttentionCase("bf16", max(1, ATTENTION_TOKENS // s), s, HEADS, HEADS, d, True)
        for d in dims
        for s in seqs
    ]
    if not quick:
        attention.append(AttentionCase("bf16", ATTENTION_TOKENS // 4096, 4096, HEADS, HEADS, 128, False))
        # Grouped-query attention as Llama-3 runs it (8 KV heads); backends without it leave a note.
        attention.append(
            AttentionCase("bf16", ATTENTION_TOKENS // 8192, 8192, HEADS, GQA_KV_HEADS, 128, True)
        )
    sizes_copied: tuple[int, ...] = QUICK_COPY_BYTES if quick else COPY_BYTES
    copies = tuple(b for b in sizes_copied if b * 8 <= memory_bytes) or (min(sizes_copied),)
    sizes = QUICK_COLLECTIVE_BYTES if quick else COLLECTIVE_BYTES
    collectives = tuple(CollectiveCase(op, b) for op in COLLECTIVE_OPS for b in sizes)
    return Plan(
        gemm=gemm,
        attention=tuple(attention),
        copy_bytes=copies,
        collectives=collectives,
        warmup=2 if quick else 3,
        repeats=5 if quick else 10,
        all_kernels=not quick,
    )
