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

Rescore = Callable[..., "Scored | None"]
"""rescore(plan, f, g[, failure]): a plan re-scored at efficiency x f, price x g and the failure rate x
failure (None: then outside the deadline or budget)."""
Rank = Callable[[list["Scored"]], list["Scored"]]

EFFICIENCY_RANGE = (0.5, 2.0)
"""The efficiency multipliers searched: the interval's P10-P90 is 0.52x-1.62x the P50 (README, Accuracy)."""
PRICE_RANGE = (0.5, 2.0)
"""Price multipliers searched: spot, reserved and regional prices span about this range of on-demand."""
FAILURE_RANGE = (0.1, 10.0)
"""Failure-rate multipliers searched around Llama 3's measured rate: clusters report rates an order of
magnitude apart (newer fleets, older GPUs, burn-in)."""
STEPS = 10
"""Bisection steps: the flip value to within 0.1% (a ratio of 2 halved ten times)."""
FAILURE_STEPS = 8
"""Bisection steps of the failure rate, every plan re-scored at each: to within 1% (a ratio of 10)."""


@dataclasses.dataclass(frozen=True, slots=True, repr=False, eq=False)
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


def failure_flip(plans: list[Scored], rescore: Rescore, rank: Rank) -> Flip | None:
    """The failure rate (every plan re-scored with it) at which another plan is first: the nearer of a higher
    and a lower rate, or None (training only; every plan must stay scoreable)."""
    if plans[0].latency_s is not None:
        return None
    first = plans[0].key

    def first_at(f: float) -> bool:
        trial = [x for x in (rescore(p, 1.0, 1.0, f) for p in plans) if x is not None]
        ranked = rank(trial)
        return bool(ranked) and ranked[0].key == first

    best: Flip | None = None
    for toward in FAILURE_RANGE:
        if first_at(toward):
            continue
        lo, hi = 1.0, toward
        for _ in range(FAILURE_STEPS):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if first_at(mid) else (lo, mid)
        trial = [x for x in (rescore(p, 1.0, 1.0, hi) for p in plans) if x is not None]
        flip = Flip("failure", hi, _name(rank(trial)[0]) if rank(trial) else "no plan", f"{hi:.2g}x")
        if best is None or flip.distance < best.distance:
            best = flip
    return best


def change_line(plans: Sequence[Scored], i: int, rescore: Rescore, rank: Rank) -> str:
    """One line for plan i: the one or two inputs nearest to changing whether it is first."""
    found = flips(list(plans), i, rescore, rank)
    if i == 0:
        extra = [memory_flip(list(plans), rank), failure_flip(list(plans), rescore, rank)]
        found = sorted([*found, *[f for f in extra if f is not None]], key=lambda f: f.distance)
    if not found:
        return (
            "would change: no efficiency from 0.5x to 2x its P50 and no price from half to double moves "
            + ("it from first place" if i == 0 else "it to first place")
        )
    parts = [_phrase(f, i == 0) for f in found[:2]]
    return "would change: " + "; ".join(parts)


def _phrase(f: Flip, first: bool) -> str:
    pct = abs(f.factor - 1.0)
    if f.what == "failure":
        more = "more" if f.factor > 1 else "fewer"
        return (
            f"if interruptions are {f.value} the measured rate ({more} failures per GPU-hour): {f.first} "
            "ranks first"
        )
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
