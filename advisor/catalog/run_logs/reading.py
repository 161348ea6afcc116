"""Provides Reading: what one run file says (its format, the inputs it states, what it measured)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True, slots=True, repr=False)
class Reading:
    """One measured run read from a file.

    inputs are registry field names (gpu, count, model, seq_len, batch_size, tp, pp, global_batch, stack,
    engine, prompt_tokens, output_tokens, ...) with the values the file states; measured holds what it
    measured: training `tokens_per_s` (all GPUs) or serving `output_tok_s`, `ttft_ms`, `tpot_ms`; lines say
    where each value came from, for --dry-run."""

    format: str
    kind: Literal["training", "serving"]
    source: str
    inputs: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)
    lines: tuple[str, ...] = ()
    needs: tuple[tuple[str, str], ...] = ()
    """(field, why) for inputs the measurement cannot be read without (e.g. seq_len for samples/s)."""
