"""Provides spanned(): a training answer whose stack the user left open, its interval widened to the
best-case stack's P50 and the difference said, so a plan is never quoted for one stack as if it were all."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from advisor.answer.plan_out import Throughput
from advisor.learned.efficiency.base import Interval

if TYPE_CHECKING:
    from advisor.answer.predict import Prediction


def spanned(found: Prediction, other: Prediction, assumed: str, other_stack: str, count: int) -> Prediction:
    """`found` (answered for the assumed stack) with its throughput interval reaching `other`'s P50 (the same
    GPU x count on `other_stack`), the step time and efficiency widened alike, and a note naming both."""
    mine, theirs = found.throughput, other.throughput
    if mine is None or theirs is None:
        return found
    low, high = min(mine.p10, theirs.value), max(mine.p90, theirs.value)
    tput = Throughput(value=mine.value, p10=low, p90=high, unit=mine.unit)
    ratio = theirs.value / mine.value
    gpus = f"{count:,} GPU{'s' if count > 1 else ''}"
    note = (
        f"stack not stated: answered for {assumed}, the default for this workload; on the same {gpus} with "
        f"{other_stack} ({other.parallelism}) it would be {theirs.value:,.0f} {mine.unit} ({ratio:.2f}x): "
        f"the interval spans both"
    )
    return dataclasses.replace(
        found,
        throughput=tput,
        step_time_s=_widened(found.step_time_s, mine.p90 / high, mine.p10 / low),
        efficiency=_widened(found.efficiency, low / mine.p10, high / mine.p90),
        notes=(*found.notes, note),
    )


def _widened(interval: Interval | None, low_factor: float, high_factor: float) -> Interval | None:
    """The interval with its P10 times low_factor and its P90 times high_factor (factors <= 1 and >= 1)."""
    if interval is None:
        return None
    return Interval(interval.p10 * low_factor, interval.p50, interval.p90 * high_factor, note=interval.note)
