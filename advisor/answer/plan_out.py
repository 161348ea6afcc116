"""Provides the output records a predicted plan is made of (memory, throughput, layout, goodput, configuration
values, runner-up layouts): what `predict` shows, without the report's records (advisor/answer/report.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class MemoryOut:
    """Per-GPU memory of a plan."""

    per_gpu_gb: float
    """Central estimate: what the verdict is decided on."""
    per_gpu_gb_low: float
    """P10 of the peak: the central estimate times the error band measured on published runs."""
    per_gpu_gb_high: float
    """P90 of the peak."""
    capacity_gb: float
    """The card's memory in GB (1e9 bytes): 80 GiB is 85.9."""
    usable_gb: float
    """What CUDA hands out, less any headroom kept free."""
    fits: bool
    verdict: str
    """fits, may not fit (the band straddles the usable memory) or does not fit."""
    dominant: str
    breakdown: dict[str, float]
    """Central estimate per component, GB."""
    host_gb: float = 0.0
    """Offloaded or paged states in host memory, per GPU."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Throughput:
    """Whole-system throughput with its interval."""

    value: float
    p10: float
    p90: float
    unit: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ConfigValue:
    """One value of the run's configuration and whether the user gave it or the search chose it."""

    value: int | float | str | bool
    source: str
    """given | chosen | default."""
    note: str | None = None
    """What the value does in this plan, when that is not what it says (ZeRO-3 given on one data rank)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class AlternativeOut:
    """A runner-up layout at the same GPU and count, and what it costs in time."""

    parallelism: str
    layout: LayoutOut
    memory_per_gpu_gb: float
    step_time_s: float
    """P50 step time."""
    slower: float
    """Its P50 time per item over the chosen layout's (1.25 = 25% slower; the same as the steps' ratio where
    both steps process the same global batch)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class GoodputOut:
    """Interruptions at this scale and the useful share of wall time."""

    fraction: float
    mtbf_h: float
    checkpoint_s: float
    checkpoint_interval_h: float
    restart_h: float
    interruptions: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class LayoutOut:
    """The parallel layout."""

    tp: int
    pp: int
    dp: int
    sharding: str
    recompute: str
    micro_batch: int
    grad_accum: int
    cp: int = 1
    ep: int = 1
    shard_group: int = 0
    virtual: int = 1
