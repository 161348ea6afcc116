"""Provides the risk-aware order of ranked plans: a plan whose memory P90 passes the usable capacity never
ranks above a safe plan within the model's own error on time and cost, `balanced` prefers fewer nodes within
that error, and the first place explains itself in one line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from advisor.question.units import fmt_hours
from advisor.search.training import preferred

if TYPE_CHECKING:
    from advisor.answer.scored import Scored
    from advisor.job.inputs import Constraints


def memory_risky(memory: Any) -> bool:
    """Whether the memory's P90 (the range published runs fell in) passes the usable capacity."""
    return bool(memory.high_gb > memory.usable_gb)


def within(a: Scored, b: Scored, error: float) -> bool:
    """Whether plan a is no worse than plan b by more than the model's error, on time and on cost."""
    return a.cost.mid <= b.cost.mid * (1.0 + error) and a.time_key <= b.time_key * (1.0 + error)


def _standing(s: Scored, balanced: bool) -> tuple[int, int]:
    """What a plan is preferred for within the error: memory safe first, then (balanced) fewer nodes."""
    return int(memory_risky(s.cand.memory)), s.cand.layout.nodes if balanced else 0


def risk_aware(ranked: list[Scored], objective: str, error: float) -> list[Scored]:
    """The ranked plans, each moved below every plan it does not beat by more than the error that is safer in
    memory (or, balanced, as safe on fewer nodes). Plans are settled most-preferred first, so a plan moved
    down takes the place of the last plan it yields to: the order stays a ranking (no cycles)."""
    balanced = objective == "balanced"
    standing = [_standing(s, balanced) for s in ranked]
    if len(set(standing)) < 2:
        return ranked  # every plan stands the same: nothing to move
    place = [float(i) for i in range(len(ranked))]
    # Each plan's cost and time read once: the comparisons below are within()'s.
    costs = [s.cost.mid for s in ranked]
    times = [s.time_key for s in ranked]
    order = sorted(range(len(ranked)), key=lambda i: (standing[i], place[i]))
    # The plans a plan may yield to stand better, so they come before it in `order` (settled already): only
    # that prefix is compared (the what-would-change lines re-rank these plans hundreds of times).
    safer = 0
    for i in order:
        mine, cost_cap, time_cap = standing[i], costs[i] * (1.0 + error), times[i] * (1.0 + error)
        while standing[order[safer]] < mine:
            safer += 1
        yields = [place[j] for j in order[:safer] if costs[j] <= cost_cap and times[j] <= time_cap]
        if yields and max(yields) > place[i]:
            place[i] = max(yields) + 1e-6 * (1 + place[i] / (len(ranked) + 1))
    order = sorted(range(len(ranked)), key=lambda i: place[i])
    return [ranked[i] for i in order]


def _limits_text(constraints: Constraints) -> str:
    limits = []
    if constraints.deadline_hours is not None:
        limits.append("your deadline")
    if constraints.budget_usd is not None:
        limits.append("your budget")
    return " within " + " and ".join(limits) + " at P90" if limits else ""


def first_reason(
    ranked: Sequence[Scored], original: Sequence[Scored], constraints: Constraints, error: float
) -> str:
    """One line: why the first plan is first, and which plan the risk-aware order moved below it, if any."""
    if not ranked:
        return ""
    first = ranked[0]
    what = {
        "cheapest": "the cheapest P50 cost",
        "fastest": "the fastest P50 time" if first.latency_s is None else "the lowest P50 latency",
        "balanced": "the lowest cost x time",
    }[constraints.objective]
    line = f"first: {what}{_limits_text(constraints)}"
    top = original[0] if original else first
    if top is not first:
        line += "; " + _moved(top, first, constraints.objective, error)
    elif constraints.objective == "balanced":
        line += f" (fewer nodes preferred where plans differ by less than the model's {error:.0%} error)"
    return line


def _moved(top: Scored, first: Scored, objective: str, error: float) -> str:
    """Why the plan the objective alone would rank first is not."""
    plan = f"{top.cand.gpu.id} x{top.cand.layout.count}"
    gain = (
        f"{fmt_hours(top.time_key)}, ${top.cost.mid:,.0f}"
        if top.latency_s is None
        else f"${top.cost.mid:,.0f}"
    )
    mem = top.cand.memory
    if memory_risky(mem) and not memory_risky(first.cand.memory):
        why = (
            f"its memory P90 {mem.high_gb:.0f} GB passes the {mem.usable_gb:.0f} GB usable, and this plan is "
            "within the model's error of it"
        )
    else:
        why = f"it needs {top.cand.layout.nodes} nodes to this plan's {first.cand.layout.nodes}"
    return (
        f"{plan} ({gain}) would be first on the {objective} score alone, but {why} ({error:.0%} on time and "
        "cost)"
    )


def safer_layout(group: list[tuple[Any, Any]], chosen: int, margin: float) -> int:
    """Within one GPU and count, a layout whose memory P90 fits in place of a chosen one whose P90 does not,
    when it is slower by no more than the model's error (among those, picked as the search picks: the
    simplest unless another is faster by more than the error); else the chosen one."""
    cand, eff = group[chosen]
    if not memory_risky(cand.memory):
        return chosen
    limit = cand.predicted_s(eff.p50) * (1.0 + margin)
    safe = [
        i for i, (c, e) in enumerate(group) if not memory_risky(c.memory) and c.predicted_s(e.p50) <= limit
    ]
    if not safe:
        return chosen
    return safe[preferred([group[i] for i in safe], margin)]
