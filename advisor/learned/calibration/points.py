"""Provides the configuration of a plan as the calibration's distance reads it: model size, sequence,
count, layout, batch, recomputation, precision and workload (training); size, count, load and lengths
(serving)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from advisor.job.layout import ZERO_STAGE
from advisor.physics.step_ops import COMM

_RECOMPUTE = {"none": 0.0, "selective": 1.0, "full": 2.0}
_KIND = {"pretrain": 0.0, "finetune": 1.0, "lora": 2.0, "qlora": 3.0}


def _log(x: float | int | None) -> float:
    return math.log(max(float(x or 1), 1.0))


def training_point(
    *, params: float, seq_len: int, kind: str, precision: str, count: int, layout: Any
) -> dict[str, float]:
    """A training plan's configuration (layout: a Layout or its LayoutOut)."""
    return {
        "log_params": _log(params),
        "log_seq": _log(seq_len),
        "log_count": _log(count),
        "log_tp": _log(layout.tp),
        "log_pp": _log(layout.pp),
        "log_cp": _log(layout.cp),
        "log_ep": _log(layout.ep),
        "log_micro_tokens": _log(layout.micro_batch * seq_len),
        "zero": float(ZERO_STAGE.get(layout.sharding, 0)),
        "recompute": _RECOMPUTE.get(layout.recompute, 1.0),
        "fp8": 1.0 if precision.startswith("fp8") else 0.0,
        "kind": _KIND.get(kind, 0.0),
    }


def serving_point(
    *, params: float, count: int, tp: int, load: float, prompt: int, output: int, precision: str
) -> dict[str, float]:
    """A serving deployment's configuration at a load (requests in flight, or a request rate)."""
    return {
        "log_params": _log(params),
        "log_count": _log(count),
        "log_tp": _log(tp),
        "log_load": _log(load),
        "log_prompt": _log(prompt),
        "log_output": _log(output),
        "fp8": 1.0 if precision.startswith("fp8") else 0.0,
    }


def step_shares(parts: Iterable[tuple[str, float]], step_s: float) -> dict[str, float]:
    """The parts the calibration moves apart, from a step's breakdown by operation class (the composed
    parts, not the learned residual): the exposed communication's share, the rest's, and 1 / the predicted
    step's seconds (what a per-step overhead is a share of)."""
    seconds = [(op, s) for op, s in parts if s > 0]
    total = sum(s for _, s in seconds)
    comm = sum(s for op, s in seconds if op in COMM) / total if total > 0 else 0.0
    return {
        "share_compute": 1.0 - comm,
        "share_comm": comm,
        "inv_step_s": 1.0 / step_s if step_s > 0 else 0.0,
    }
