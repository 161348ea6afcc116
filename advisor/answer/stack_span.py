"""Provides span(), between() and their notes: a training answer whose stack the user left open keeps its P50,
its interval widened to the best-case stack's P50 and the difference said, so a plan is never quoted for one
stack as if it were all; one whose recipe was left open where public runs disagree on recomputation is
answered between the two policies."""

from __future__ import annotations

import dataclasses
import math

from advisor.answer.plan_out import Throughput
from advisor.learned.efficiency.base import Interval


def span(
    mine: Throughput, other: float, step: Interval | None, efficiency: Interval | None
) -> tuple[Throughput, Interval | None, Interval | None]:
    """The throughput interval reaching `other` (the other stack's P50 on the same GPU x count), with the step
    time and the efficiency widened alike; the P50s unchanged."""
    low, high = min(mine.p10, other), max(mine.p90, other)
    tput = Throughput(value=mine.value, p10=low, p90=high, unit=mine.unit)
    return (
        tput,
        _widened(step, mine.p90 / high, mine.p10 / low),
        _widened(efficiency, low / mine.p10, high / mine.p90),
    )


def between(
    mine: Throughput, other: float, step: Interval | None, efficiency: Interval | None
) -> tuple[Throughput, Interval | None, Interval | None]:
    """span() with the P50 moved to the geometric middle of the two P50s (the step time's and the efficiency's
    P50 moved alike): the answer for a choice the public runs split on, the interval reaching both ends."""
    tput, step, efficiency = span(mine, other, step, efficiency)
    factor = math.sqrt(other / mine.value)
    return (
        dataclasses.replace(tput, value=mine.value * factor),
        _p50_times(step, 1.0 / factor),
        _p50_times(efficiency, factor),
    )


def open_recompute_note(mine: Throughput, theirs: float, params: float) -> str:
    """What the answer says of a recomputation the user left open (mine: the plan without it)."""
    return (
        f"recompute not stated: public runs of this stack at {params / 1e9:.0f}B parameters split between "
        f"none and full activation recomputation (knowledge/training_stacks.toml); the P50 is midway between "
        f"this plan without it ({mine.value:,.0f} {mine.unit}) and with full recomputation ({theirs:,.0f}, "
        f"{theirs / mine.value:.2f}x), the interval spans both; state the recomputation to answer for one"
    )


def open_stack_note(
    assumed: str, other: str, layout: str, mine: Throughput, theirs: float, count: int
) -> str:
    """What the answer says of the stack it assumed and the one its interval also spans."""
    gpus = f"{count:,} GPU{'s' if count > 1 else ''}"
    return (
        f"stack not stated: answered for {assumed}, the default for this workload; on the same {gpus} with "
        f"{other} ({layout}) it would be {theirs:,.0f} {mine.unit} ({theirs / mine.value:.2f}x): "
        f"the interval spans both"
    )


def _p50_times(interval: Interval | None, factor: float) -> Interval | None:
    """The interval with its P50 times factor, kept within its P10 and P90."""
    if interval is None:
        return None
    p50 = min(max(interval.p50 * factor, interval.p10), interval.p90)
    return Interval(interval.p10, p50, interval.p90, note=interval.note)


def _widened(interval: Interval | None, low_factor: float, high_factor: float) -> Interval | None:
    """The interval with its P10 times low_factor and its P90 times high_factor (factors <= 1 and >= 1)."""
    if interval is None:
        return None
    return Interval(interval.p10 * low_factor, interval.p50, interval.p90 * high_factor, note=interval.note)
