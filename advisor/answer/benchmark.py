"""Provides benchmark_for(): the short benchmark run of a report's chosen plan
(advisor/ops/benchmark_script.py), written from the plan and the input its ranking hinges on."""

from __future__ import annotations

from advisor.answer.report import Report
from advisor.catalog.loader import Knowledge
from advisor.job.resolve import resolve_job
from advisor.ops.benchmark_script import BenchmarkInputs, benchmark_files


def benchmark_for(knowledge: Knowledge, report: Report) -> dict[str, str]:
    """benchmark.sh and BENCHMARK.md for the first plan (the report must have one)."""
    plan = report.plans[0]
    settles = next((r for r in plan.reasons if r.startswith("would change: ")), "its predicted efficiency")
    hours = plan.hours.p50 or 1.0
    per_hour = plan.price.usd_per_hour if plan.price is not None else plan.cost_usd.mid / hours
    inputs = BenchmarkInputs(
        job=resolve_job(knowledge, report.workload),
        plan=plan.facts(),
        cp=plan.layout.cp,
        ep=plan.layout.ep,
        settles=settles,
        usd_per_hour=per_hour,
    )
    return benchmark_files(inputs)
