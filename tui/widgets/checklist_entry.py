"""Provides the renderings of one checklist entry: header (with a plan's remedies), symptoms, references."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut
    from advisor.catalog import Knowledge
    from advisor.catalog.checklist import ChecklistEntry


def _join(lines: list[Content]) -> Content:
    return Content("\n").join(lines)


def entry_header(entry: ChecklistEntry | None, plan: PlanOut | None) -> Content:
    """Title, and for a plan with memory remedies: its largest component and what shrinks it."""
    if entry is None:
        # Said so that it works from the search box too, where an a would be typed.
        return Content.from_markup(
            "No entry matches. Try other words, or press [b]Tab[/b] then [b]a[/b] for all entries."
        )
    lines = [
        Content.from_markup(
            "[b $text-accent]$title[/]  [$text-muted]$id · $cat[/]",
            title=entry.title,
            id=entry.id,
            cat=entry.category,
        )
    ]
    if plan is not None and entry.remedies:
        m = plan.memory
        lines.append(
            Content.from_markup(
                "[b $warning]This plan:[/] [b]$dom[/b] is the largest part of its memory "
                "($gb of $total GB per GPU "
                "on the $gpu).",
                dom=m.dominant,
                gb=f"{m.breakdown.get(m.dominant, 0.0):.1f}",
                total=f"{m.per_gpu_gb:.1f}",
                gpu=plan.gpu,
            )
        )
        remedies = entry.remedies.get(m.dominant, ())
        if remedies:
            lines.append(Content.from_markup("What shrinks [b]$dom[/b]:", dom=m.dominant))
            lines += [Content.from_markup("- $r", r=r) for r in remedies]
    return _join(lines)


def entry_symptoms(entry: ChecklistEntry | None) -> Content:
    """What the failure looks like, and the measured levels past which the entry applies."""
    if entry is None:
        return Content("")
    lines = [Content.from_markup("[b]Symptoms[/b]")]
    lines += [Content.from_markup("- $s", s=s) for s in entry.symptoms]
    if entry.thresholds:
        lines.append(Content.from_markup("[b]Thresholds[/b]"))
        lines += [
            Content.from_markup(
                "- [b]$metric $op $value $unit[/b]: $meaning [$text-muted]$src[/]",
                metric=t.metric,
                op=t.op,
                value=f"{t.value:g}",
                unit=t.unit,
                meaning=t.meaning,
                src=f"[{t.source}]",
            )
            for t in entry.thresholds
        ]
    return _join(lines)


def entry_references(entry: ChecklistEntry | None, plan: PlanOut | None, knowledge: Knowledge) -> Content:
    """The remedies for every memory component, the tools and the sources."""
    if entry is None:
        return Content("")
    lines: list[Content] = []
    if entry.remedies:
        lines.append(Content.from_markup("[b]What shrinks each memory component[/b]"))
        dominant = plan.memory.dominant if plan is not None else None
        for component, remedies in entry.remedies.items():
            style = "b $warning" if component == dominant else "b"
            lines.append(Content.from_markup(f"[{style}]$c[/]: $r", c=component, r="; ".join(remedies)))
    if entry.tools:
        lines.append(Content.from_markup("[b]Tools[/b]: $t", t=", ".join(entry.tools)))
    lines.append(Content.from_markup("[b]Sources[/b]"))
    for key in entry.sources:
        src = knowledge.source(key)
        lines.append(
            Content.from_markup(
                "- $key [$text-muted]$where[/]", key=key, where=(src.url or src.ref) if src else ""
            )
        )
    return _join(lines)


def step_prompt(index: int, text: str, command: str | None) -> Content:
    """One numbered step, with its command on the next line."""
    prompt = Content.assemble((f"{index + 1}. ", "bold"), text)
    if command:
        prompt = Content.assemble(prompt, "\n", ("$ ", "$text-muted"), (command, "$text-accent"))
    return prompt
