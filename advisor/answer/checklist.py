"""Provides checklist lookups: one error type by id or alias word, or a ranked text search across all."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.catalog.checklist import ChecklistEntry
from advisor.catalog.common import normalise_id
from advisor.catalog.loader import Knowledge
from advisor.question.errors import InputError
from advisor.question.fields import did_you_mean

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut, Report


def entry(knowledge: Knowledge, error_type: str) -> ChecklistEntry:
    """One entry by id (case-insensitive); InputError lists the accepted ids."""
    wanted = normalise_id(error_type)
    for e in knowledge.checklist:
        if e.id == wanted:
            return e
    ids = [e.id for e in knowledge.checklist]
    hint = did_you_mean(error_type, ids)
    near = f"{hint} " if hint else ""
    raise InputError(f"unknown error type {error_type!r}; {near}accepted: {', '.join(ids)}")


def search(knowledge: Knowledge, text: str) -> list[ChecklistEntry]:
    """Entries containing every word of `text`, those matching in the title or keywords first."""
    words = [w for w in text.lower().split() if w]
    if not words:
        raise InputError(
            field="search", value=text, problem="holds no words", accepted="some text to look for"
        )
    hits = []
    for e in knowledge.checklist:
        hay = e.haystack()
        if all(w in hay for w in words):
            head = " ".join([e.id, e.title, *e.keywords]).lower()
            hits.append((-sum(w in head for w in words), knowledge.checklist.index(e), e))
    return [e for *_, e in sorted(hits, key=lambda h: (h[0], h[1]))]


def find_entries(knowledge: Knowledge, error_type: str | None, text: str | None) -> list[ChecklistEntry]:
    """What the checklist command shows: one entry, a search, or all."""
    if error_type:
        found = [entry(knowledge, error_type)]
        if text:
            found = [e for e in found if e in search(knowledge, text)]
        return found
    if text:
        return search(knowledge, text)
    return list(knowledge.checklist)


def entries_for_plan(knowledge: Knowledge, report: Report, plan: PlanOut) -> list[tuple[ChecklistEntry, str]]:
    """The checklist entries worth reading before running a plan, most likely first, each with why."""
    wanted: list[tuple[str, str]] = [
        (
            "oom",
            f"{plan.memory.dominant} is the largest memory component "
            f"({plan.memory.per_gpu_gb:.0f} of {plan.memory.usable_gb:.0f} GB)",
        )
    ]
    if plan.count > 1:
        wanted += [
            ("nccl-hang", f"{plan.count} GPUs synchronise every step"),
            ("distributed-mismatch", "every worker must run the same versions"),
        ]
    if plan.nodes > 1:
        wanted.append(("network", f"{plan.nodes} servers talk over the network"))
    if plan.price is not None and plan.price.pricing == "spot":
        wanted.append(("preemption", "spot capacity can be reclaimed"))
    if plan.precision == "fp16":
        wanted.append(("nan-loss", "fp16 needs loss scaling"))
    if report.job.kind != "inference":
        wanted.append(("underperformance", f"the plan assumes {plan.efficiency.p50:.0%} of speed of light"))
    if report.constraints.budget_usd is not None:
        wanted.append(("cost-overrun", f"a budget of ${report.constraints.budget_usd:,.0f} is set"))
    by_id = {e.id: e for e in knowledge.checklist}
    return [(by_id[i], why) for i, why in dict(wanted).items() if i in by_id]
