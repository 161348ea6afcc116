"""Speed-of-light prefill and decode times of one serving replica (standard library only).

Decode reads every local weight once per step plus each sequence's KV cache at its average length, and does
2 x active-params FLOPs per token; it runs at the slower of its bandwidth and compute bounds. Prefill does
2 x active-params x prompt + 2 x layers x hidden x prompt^2 FLOPs (attention scores), compute bound.
These mirror advisor/physics/speed.py serving_times without its TP all-reduce term, which the learned
efficiency absorbs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GB = 1e9
KV_MEMORY_SHARE = 0.9  # share of (memory - weights) the engine gives the KV cache (TensorRT-LLM default 0.90)
MAX_BATCH = 2048  # prior cap on concurrent sequences of one replica (engine scheduler limit), not measured


@dataclass(frozen=True, slots=True)
class Shape:
    """What the physics needs of a model."""

    params: float
    active_params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int


@dataclass(frozen=True, slots=True)
class Hardware:
    """What the physics needs of one replica: per-GPU peak for the precision, bandwidth, memory, GPU count."""

    peak_flops: float
    bandwidth: float
    memory_bytes: float
    gpus: int


def bytes_per_value(precision: str) -> float:
    """Weight (and KV) bytes: fp8 engines also store an fp8 KV cache; fp4 weights are half a byte."""
    return {"fp8": 1.0, "nvfp4": 0.5, "int8": 1.0, "int4": 0.5}.get(precision, 2.0)


def kv_bytes_per_token(shape: Shape, precision: str, gpus: int) -> float:
    """KV-cache bytes one token adds on each GPU of the replica."""
    head_dim = shape.hidden / shape.heads
    kv = 1.0 if precision in ("fp8", "nvfp4") else 2.0
    return 2.0 * shape.layers * shape.kv_heads * head_dim * kv / gpus


def weights_bytes(shape: Shape, precision: str, gpus: int) -> float:
    return shape.params * bytes_per_value(precision) / gpus


def batch_capacity(shape: Shape, hw: Hardware, precision: str, isl: int, osl: int) -> int:
    """Sequences the KV cache holds at full length, capped at MAX_BATCH; 0 when the weights do not fit."""
    room = (hw.memory_bytes - weights_bytes(shape, precision, hw.gpus)) * KV_MEMORY_SHARE
    per_seq = kv_bytes_per_token(shape, precision, hw.gpus) * (isl + osl)
    return max(0, min(MAX_BATCH, int(room // per_seq))) if room > 0 else 0


def decode_step_s(shape: Shape, hw: Hardware, precision: str, batch: float, context: float) -> float:
    """One decode step of `batch` sequences at average `context` tokens, at 100% efficiency."""
    t_bytes = (
        weights_bytes(shape, precision, hw.gpus)
        + batch * kv_bytes_per_token(shape, precision, hw.gpus) * context
    ) / hw.bandwidth
    t_flops = batch * 2.0 * shape.active_params / hw.gpus / hw.peak_flops
    return max(t_bytes, t_flops)


def prefill_s(shape: Shape, hw: Hardware, prompt: int) -> float:
    """Prefill of one prompt on the whole replica, at 100% efficiency."""
    flops = 2.0 * shape.active_params * prompt + 2.0 * shape.layers * shape.hidden * prompt * prompt
    return flops / hw.gpus / hw.peak_flops


def offline_output_tok_s(
    shape: Shape,
    hw: Hardware,
    precision: str,
    isl: int,
    osl: int,
    batch: float,
    eta_prefill: float,
    eta_decode: float,
) -> float:
    """Output tokens/s of a replica kept full at `batch`: each request costs its prefill plus its share of
    steps."""
    step = decode_step_s(shape, hw, precision, batch, isl + osl / 2.0) / eta_decode
    per_request = prefill_s(shape, hw, isl) / eta_prefill + osl * step / batch
    return osl / per_request if per_request > 0 and not math.isinf(per_request) else 0.0
