"""Provides span() and open_stack_note(): a training answer whose stack the user left open keeps its P50, its
interval widened to the best-case stack's P50 and the difference said, so a plan is never quoted for one stack
as if it were all."""

from __future__ import annotations

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


def _widened(interval: Interval | None, low_factor: float, high_factor: float) -> Interval | None:
    """The interval with its P10 times low_factor and its P90 times high_factor (factors <= 1 and >= 1)."""
    if interval is None:
        return None
    return Interval(interval.p10 * low_factor, interval.p50, interval.p90 * high_factor, note=interval.note)
