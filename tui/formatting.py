"""Provides short text renderings of the report's numbers (durations, money, ranges) for tables and panels."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.question.units import fmt_hours, human

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut, Report

__all__ = [
    "fmt_hours",
    "gpus",
    "hours_range",
    "human",
    "job_line",
    "money",
    "money_range",
    "plan_cost",
    "plan_timing",
]


def money(usd: float) -> str:
    """'$1,234' (cents only below $10)."""
    return f"${usd:,.2f}" if usd < 10 else f"${usd:,.0f}"


def money_range(low: float, high: float) -> str:
    """'$111-350', '$0.86-1.47'; one figure only when both ends print the same (inference months)."""
    a, b = money(low), money(high)
    return a if a == b else f"{a}-{b.removeprefix('$')}"


def gpus(n: int) -> str:
    """'GPU' or 'GPUs' for a count."""
    return "GPU" if n == 1 else "GPUs"


def hours_range(low: float, high: float) -> str:
    """'16-49 min' when both ends share a unit, else '49 min-1.1 h'."""
    a, b = fmt_hours(low), fmt_hours(high)
    a_num, _, a_unit = a.partition(" ")
    b_num, _, b_unit = b.partition(" ")
    return f"{a_num}-{b_num} {b_unit}" if a_unit == b_unit else f"{a}-{b}"


def plan_timing(plan: PlanOut) -> str:
    """Training: time P10-P90. Inference: first-token / per-token latency at P50."""
    if plan.serving is not None:
        return f"{plan.serving.ttft_ms.p50:,.0f} / {plan.serving.tpot_ms.p50:,.0f} ms"
    return hours_range(plan.hours.p10, plan.hours.p90)


def plan_cost(plan: PlanOut, inference: bool) -> str:
    """The cost range, per month for inference."""
    text = money_range(plan.cost_usd.low, plan.cost_usd.high)
    return f"{text}/mo" if inference else text


def job_line(report: Report) -> str:
    """'Llama 2 70B: lora, 69B parameters, 100M tokens'."""
    job = report.job
    line = f"{job.model_name}: {job.kind}, {human(job.params)} parameters"
    if job.total_items:
        line += f", {human(job.total_items)} {job.unit.removesuffix('/s')}"
    if job.kind == "inference" and report.workload.requests_per_s:
        line += f", {report.workload.requests_per_s:g} requests/s"
    return line
