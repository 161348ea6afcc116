"""Provides what would change the answer: for each top plan, the uncertain inputs (its efficiency, its price,
the stack's memory overhead) and the value at which its place changes, found by re-scoring the plan and
re-ranking every plan, never by a closed form."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.answer.scored import Scored

Rescore = Callable[["Scored", float, float], "Scored | None"]
"""A plan re-scored at efficiency x f and price x g (None: then outside the deadline or budget)."""
Rank = Callable[[list["Scored"]], list["Scored"]]

EFFICIENCY_RANGE = (0.5, 2.0)
"""The efficiency multipliers searched: the interval's P10-P90 is 0.52x-1.62x the P50 (README, Accuracy)."""
PRICE_RANGE = (0.5, 2.0)
"""Price multipliers searched: spot, reserved and regional prices span about this range of on-demand."""
STEPS = 14
"""Bisection steps: the flip value to about 0.01% of the range's ratio."""


@dataclasses.dataclass(frozen=True, slots=True)
class Flip:
    """An input, the multiplier on it at which the plan's place changes, and which plan is then first."""

    what: str
    factor: float
    first: str
    value: str

    @property
    def distance(self) -> float:
        return abs(math.log(self.factor))


def _first_key(rank: Rank, plans: list[Scored]) -> tuple[str, int, int] | None:
    ranked = rank(plans)
    return ranked[0].key if ranked else None


def _is_first(rank: Rank, plans: list[Scored], i: int, changed: Scored | None) -> bool:
    """Whether plan i, replaced by `changed` (or dropped when None), is first after re-ranking."""
    trial = plans[:i] + ([changed] if changed is not None else []) + plans[i + 1 :]
    return changed is not None and _first_key(rank, trial) == changed.key


def _flip(
    plans: list[Scored], i: int, rank: Rank, trial: Callable[[float], Scored | None], toward: float
) -> float | None:
    """The multiplier between 1 and `toward` at which plan i's being first changes, or None."""
    now = _is_first(rank, plans, i, plans[i])
    if _is_first(rank, plans, i, trial(toward)) == now:
        return None
    lo, hi = 1.0, toward
    for _ in range(STEPS):
        mid = math.sqrt(lo * hi)
        if _is_first(rank, plans, i, trial(mid)) == now:
            lo = mid
        else:
            hi = mid
    return hi


def _name(s: Scored) -> str:
    return f"{s.cand.gpu.id} x{s.cand.layout.count}"


def _first_after(rank: Rank, plans: list[Scored], i: int, changed: Scored | None) -> str:
    trial = plans[:i] + ([changed] if changed is not None else []) + plans[i + 1 :]
    ranked = rank(trial)
    return _name(ranked[0]) if ranked else "no plan"


def flips(plans: list[Scored], i: int, rescore: Rescore, rank: Rank) -> list[Flip]:
    """The flips of plan i's efficiency and price (lower for the first plan, higher or cheaper for others),
    nearest first."""
    s = plans[i]
    first = i == 0
    out: list[Flip] = []
    inputs: list[tuple[str, tuple[float, float], Callable[[float], Scored | None]]] = [
        ("price", PRICE_RANGE, lambda f: rescore(s, 1.0, f))
    ]
    if s.latency_s is None:  # a training plan: its time follows its efficiency
        inputs.insert(0, ("efficiency", EFFICIENCY_RANGE, lambda f: rescore(s, f, 1.0)))
    for what, lo_hi, build in inputs:
        toward = lo_hi[0] if (what == "efficiency") == first else lo_hi[1]
        factor = _flip(plans, i, rank, build, toward)
        if factor is None:
            continue
        changed = build(factor)
        value = (
            f"{s.eff.p50 * factor:.0%} of speed of light"
            if what == "efficiency"
            else f"${(s.price.offer.usd_per_gpu_hour if s.price else s.usd_per_hour) * factor:,.2f}/GPU-h"
        )
        out.append(Flip(what, factor, _first_after(rank, plans, i, changed), value))
    return sorted(out, key=lambda f: f.distance)


def memory_flip(plans: list[Scored], rank: Rank) -> Flip | None:
    """For the first plan: the memory overhead at which its P90 passes the usable memory, when the
    risk-aware ranking would then put another plan first."""
    s = plans[0]
    mem = s.cand.memory
    # A serving engine allocates its share of memory up front (no error band): no overhead to be wrong about.
    if s.latency_s is not None or mem.high_gb <= 0 or mem.high_gb > mem.usable_gb:
        return None
    factor = mem.usable_gb / mem.high_gb * 1.0001
    scaled = dataclasses.replace(mem, components=tuple((n, gb * factor) for n, gb in mem.components))
    cand = copy.copy(s.cand)
    cand.memory = scaled
    changed = copy.copy(s)
    changed.cand = cand
    first = _first_after(rank, plans, 0, changed)
    if first == _name(s):
        return None
    return Flip("memory", factor, first, f"{scaled.central_gb:.0f} GB per GPU")


def change_line(plans: Sequence[Scored], i: int, rescore: Rescore, rank: Rank) -> str:
    """One line for plan i: the one or two inputs nearest to changing whether it is first."""
    found = flips(list(plans), i, rescore, rank)
    if i == 0:
        mem = memory_flip(list(plans), rank)
        found = sorted([*found, *([mem] if mem else [])], key=lambda f: f.distance)
    if not found:
        return (
            "would change: no efficiency from 0.5x to 2x its P50 and no price from half to double moves "
            + ("it from first place" if i == 0 else "it to first place")
        )
    parts = [_phrase(f, i == 0) for f in found[:2]]
    return "would change: " + "; ".join(parts)


def _phrase(f: Flip, first: bool) -> str:
    pct = abs(f.factor - 1.0)
    if f.what == "memory":
        return (
            f"if the stack needs {pct:.0%} more memory than estimated ({f.value}), its P90 passes the usable "
            f"memory and {f.first} ranks first"
        )
    direction = (
        ("lower" if f.factor < 1 else "higher")
        if f.what == "efficiency"
        else ("cheaper" if f.factor < 1 else "dearer")
    )
    subject = "its efficiency" if f.what == "efficiency" else "its price"
    outcome = f"{f.first} ranks first" if first else "it ranks first"
    return f"{subject} {pct:.0%} {direction} ({f.value}): {outcome}"
