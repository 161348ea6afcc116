"""The mean-value analysis of an engine that runs prefill first (SGLang, vLLM V0 without chunked prefill).

Such an engine runs whole prompts in iterations of their own, up to its token budget, whenever one waits,
and the running decodes wait through them (`EngineLimits.chunked = False`; the closed and open loops
simulate it iteration by iteration in `advisor/physics/batching.py`). The open loop's mean-value analysis,
which sizes the search, prices it here as a cycle: one decode iteration of the running batch, then the
prompts that arrived meanwhile prefilled in batches of up to the budget. The cycle is what a decoding
request waits between two of its tokens, so it takes the place of the chunked engines' mean iteration in
the same fixed point (Little's law: b = rate x (output - 1) x cycle, p = rate x prompt x cycle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.physics.serving import StepPricer


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Cycle:
    """One decode iteration and the prefill batches that follow it, on average."""

    decode_s: float
    """The decode iteration of the running batch."""
    batches: float
    """Prefill batches per cycle: the chance that a prompt arrived (Poisson), or more when the prompts
    that arrive overflow one budget."""
    batch_s: float
    """One prefill batch (the prompts that arrived during a cycle, at least one; chunks of the budget when
    they are longer), the decodes waiting."""

    @property
    def total_s(self) -> float:
        return self.decode_s + self.batches * self.batch_s

    @property
    def residual_s(self) -> float:
        """Mean time left of the iteration a request arrives in (iterations sampled by their length)."""
        work = self.decode_s + self.batches * self.batch_s
        if work <= 0:
            return 0.0
        return (self.decode_s**2 + self.batches * self.batch_s**2) / (2.0 * work)


def prefill_batch_s(price: StepPricer, tokens: float, isl: float, budget: int) -> float:
    """A prefill batch of `tokens` prompt tokens with no decodes: one iteration, or the budget's chunks
    of a longer batch (each attending over half a prompt on average)."""
    if tokens <= budget:
        return price(0.0, 0.0, tokens, isl / 2.0)
    return tokens / budget * price(0.0, 0.0, float(budget), isl / 2.0)


def cycle(price: StepPricer, b: float, ctx: float, p: float, isl: float, budget: int) -> Cycle:
    """The cycle when `p` prompt tokens arrive per cycle beside `b` decoding sequences."""
    decode = price(b, ctx, 0.0, 0.0)
    if p <= 0 or isl <= 0:
        return Cycle(decode, 0.0, 0.0)
    prompts = p / isl
    whole = max(1.0, float(budget // isl))  # whole prompts one prefill iteration holds
    batches = max(-math.expm1(-prompts), prompts / whole)
    return Cycle(decode, batches, prefill_batch_s(price, p / batches, isl, budget))


def cycle_s(price: StepPricer, b: float, ctx: float, p: float, isl: float, budget: int) -> float:
    """The mean cycle: what the fixed point and the capacity read in place of a chunked engine's mean
    iteration (see the module's docstring)."""
    return cycle(price, b, ctx, p, isl, budget).total_s
