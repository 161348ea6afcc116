"""Provides the panels that describe the selected plan: memory bars, cost, rules and advice, why-not lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.reactive import var
from textual.widget import Widget

from tui.form import LABELS, label
from tui.formatting import fmt_hours, gpus, money

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut, Report
    from advisor.question.assumed import Assumed

EIGHTHS = " ▏▎▍▌▋▊▉"
LABEL_WIDTH = 16


def bar(value: float, scale: float) -> str:
    """A horizontal bar of value x scale cells, in eighths of a cell."""
    cells = max(0.0, value * scale)
    full = int(cells)
    rest = int((cells - full) * 8)
    return "█" * full + (EIGHTHS[rest] if rest else "")


def _lines(lines: list[Content]) -> Content:
    return Content("\n").join(lines)


def _bullets(items: tuple[str, ...] | list[str], style: str = "") -> list[Content]:
    return [Content.from_markup(f"[{style or '$text'}]- $item[/]", item=item) for item in items]


def _said(a: Assumed) -> str:
    """An assumption or note in the UI's words: the wizard field that would change it, by its label."""
    return a.phrase(f"set {LABELS[a.field]}" if a.field in LABELS else None)


class PlanPanel(Widget, can_focus=False):
    """A panel that renders one plan of one report; it re-renders on resize (the bars fit the width)."""

    plan: var[PlanOut | None] = var(None)
    report: var[Report | None] = var(None)

    def show(self, report: Report, plan: PlanOut | None) -> None:
        """Render this plan of this report."""
        self.report = report
        self.plan = plan
        self.refresh(layout=True)

    def lines(self, report: Report, plan: PlanOut | None) -> list[Content]:
        """The panel's lines (overridden by each panel)."""
        raise NotImplementedError

    def render(self) -> Content:
        """The lines for the current plan."""
        if self.report is None:
            return Content("")
        return _lines(self.lines(self.report, self.plan))

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[no-untyped-def]
        """As tall as its lines, so the scrolling parent can scroll them."""
        return max(1, len(self.render().wrap(max(1, width))))


class MemoryPanel(PlanPanel):
    """One bar per memory component against the GPU's capacity; the largest component stands out."""

    def lines(self, report: Report, plan: PlanOut | None) -> list[Content]:
        """Summary line, one bar per component, the total against usable memory."""
        if plan is None:
            return [Content("No plan selected.")]
        m = plan.memory
        width = max(8, self.size.width - LABEL_WIDTH - 12)
        scale = width / m.capacity_gb if m.capacity_gb else 0.0
        out = [
            Content.from_markup(
                "[b]$used GB[/b] per GPU of [b]$usable GB[/b] usable "
                "($cap GB on the $gpu, the rest kept free); "
                "largest: [b $warning]$dominant[/]",
                used=f"{m.per_gpu_gb:.1f}",
                usable=f"{m.usable_gb:.1f}",
                cap=f"{m.capacity_gb:g}",
                gpu=plan.gpu_name,
                dominant=m.dominant,
            ),
        ]
        for name, gb in sorted(m.breakdown.items(), key=lambda kv: -kv[1]):
            if gb <= 0:
                continue
            style = "$warning" if name == m.dominant else "$primary"
            out.append(
                Content.assemble(
                    f"{name:<{LABEL_WIDTH}}", (bar(gb, scale).ljust(width), style), f" {gb:7.1f} GB"
                )
            )
        usable = bar(m.usable_gb, scale)
        used = bar(m.per_gpu_gb, scale)
        total_style = "$success" if m.fits else "$error"
        out.append(
            Content.assemble(
                f"{'total':<{LABEL_WIDTH}}",
                (used, total_style),
                (("░" * max(0, len(usable) - len(used))).ljust(width - len(used)), "$text-muted"),
                f" {m.per_gpu_gb:7.1f} GB",
            )
        )
        out.append(
            Content.from_markup(
                f"[$text-muted]{'':<{LABEL_WIDTH}}░ usable memory left; "
                f"bars: share of {m.capacity_gb:g} GB[/]"
            )
        )
        return out


class StepPanel(PlanPanel):
    """The plan's P50 training step by operation class, one bar each, with each figure's basis and source."""

    def lines(self, report: Report, plan: PlanOut | None) -> list[Content]:
        """A summary line, then one bar per operation class (the learned residual last)."""
        if plan is None:
            return [Content("No plan selected.")]
        b = plan.step_breakdown
        if b is None:
            return [Content("No step breakdown: the step of this plan is not composed from operations.")]
        width = max(8, self.size.width - LABEL_WIDTH - 40)
        top = max((abs(p.seconds) for p in b.parts), default=0.0)
        scale = width / top if top else 0.0
        out = [
            Content.from_markup(
                "P50 step [b]$step s[/b]: composed from measured operations [b]$composed s[/b], paced by "
                "$stage; exposed communication $comm s",
                step=f"{b.step_s:,.3g}",
                composed=f"{b.composed_s:,.3g}",
                stage=b.slowest_stage,
                comm=f"{b.exposed_comm_s:,.3g}",
            )
        ]
        for p in b.parts:
            style = "$warning" if p.op.startswith("stack overhead") else "$primary"
            out.append(
                Content.assemble(
                    f"{p.op[: LABEL_WIDTH - 1]:<{LABEL_WIDTH}}",
                    (bar(abs(p.seconds), scale).ljust(width), style),
                    f" {p.seconds:9.3g} s {p.share:6.1%}  ",
                    (p.basis, "$text-muted"),
                )
            )
        out += _bullets(
            [f"{p.op}: {p.source}" + (f" ({p.note})" if p.note else "") for p in b.parts], "$text-muted"
        )
        return out


class CostPanel(PlanPanel):
    """The offer the plan is priced on, its hourly rate, the time range and the cost range."""

    def lines(self, report: Report, plan: PlanOut | None) -> list[Content]:
        """Offer, rate, time and cost lines."""
        if plan is None:
            return [Content("No plan selected.")]
        inference = plan.serving is not None
        out = _offer_lines(plan)
        out += _service_cost_lines(plan) if inference else _job_cost_lines(plan)
        out.append(
            Content.from_markup(
                "[$text-muted]The cost range spans the time range and demand volatility, "
                "plus storage of the data set for the job's duration.[/]"
            )
        )
        c_budget = report.constraints.budget_usd
        if c_budget is not None:
            per = "per month" if report.constraints.budget_period == "month" or inference else "for the job"
            style = "$success" if plan.cost_usd.high <= c_budget else "$warning"
            out.append(
                Content.from_markup(
                    f"[b]Budget[/b]     [{style}]$budget $per; P90 cost $high[/]",
                    budget=money(c_budget),
                    per=per,
                    high=money(plan.cost_usd.high),
                )
            )
        return out


def _offer_lines(plan: PlanOut) -> list[Content]:
    """The cloud offer and its hourly rate, or the on-prem TCO reason."""
    p = plan.price
    if p is None:
        return _bullets([r for r in plan.reasons if r.startswith("on-prem")] or ["on-prem (amortised TCO)"])
    host = "" if p.includes_host else " (GPU only, host VM extra)"
    return [
        Content.from_markup(
            "[b]Offer[/b]      $provider $instance ($region), $pricing$host; "
            "as of $date [$text-muted]$source[/]",
            provider=p.provider,
            instance=p.instance,
            region=p.region,
            pricing=p.pricing,
            host=host,
            date=p.date.isoformat(),
            source=f"[{p.source}]",
        ),
        Content.from_markup(
            "[b]Rate[/b]       $n x $per = [b]$rate/h[/b] for $billed $gpus at $gpu_rate/GPU-h",
            n=str(p.instances),
            per=f"{money(p.usd_per_hour / max(p.instances, 1))}/h",
            rate=money(p.usd_per_hour),
            billed=str(p.billed_gpus),
            gpus=gpus(p.billed_gpus),
            gpu_rate=money(p.usd_per_gpu_hour),
        ),
    ]


def _service_cost_lines(plan: PlanOut) -> list[Content]:
    """A serving plan's billed hours and cost per month of service."""
    h, c = plan.hours, plan.cost_usd
    return [
        Content.from_markup("[b]Billed[/b]     $h h per month of service", h=f"{h.p50:,.0f}"),
        Content.from_markup(
            "[b]Cost[/b]       [b]$mid per month[/b] (range $low-$high)",
            mid=money(c.mid),
            low=money(c.low),
            high=money(c.high),
        ),
    ]


def _job_cost_lines(plan: PlanOut) -> list[Content]:
    """A training plan's time (P10, P50, P90) and cost (low, mid, high)."""
    h, c = plan.hours, plan.cost_usd
    return [
        Content.from_markup(
            "[b]Time[/b]       P10 $p10   P50 [b]$p50[/b]   P90 $p90",
            p10=fmt_hours(h.p10),
            p50=fmt_hours(h.p50),
            p90=fmt_hours(h.p90),
        ),
        Content.from_markup(
            "[b]Cost[/b]       low $low   mid [b]$mid[/b]   high $high",
            low=money(c.low),
            mid=money(c.mid),
            high=money(c.high),
        ),
    ]


SOURCE_STYLE = {"given": "$success", "chosen": "$accent", "default": "$text-muted"}
OUTPUT_NAMES = {
    "micro_batch": "Micro-batch",
    "grad_accum": "Grad accumulation",
    "replicas": "Replicas",
    "batch": "Batch",
}


def configuration_lines(plan: PlanOut) -> list[Content]:
    """Each configuration value of the plan, marked given (yours), chosen (by the search) or default."""
    out = [Content.from_markup("[b]Configuration[/b] [$text-muted](given: yours; chosen: by the search)[/]")]
    for key, item in plan.configuration.items():
        value = (
            {True: "on", False: "off"}.get(item.value, item.value)
            if isinstance(item.value, bool)
            else item.value
        )
        out.append(
            Content.assemble(
                f"  {OUTPUT_NAMES.get(key) or LABELS.get(key, key):<20} {value!s:<14} ",
                (item.source, SOURCE_STYLE.get(item.source, "")),
                (f"  {item.note}" if item.note else "", "$text-muted"),
            )
        )
    return out


class AdvicePanel(PlanPanel):
    """Why this plan, the rules that fired, the advice, and what was assumed."""

    def lines(self, report: Report, plan: PlanOut | None) -> list[Content]:
        """Reasons, fired rules with their source, advice, assumptions and notes."""
        out: list[Content] = []
        if plan is not None:
            out.append(
                Content.from_markup(
                    "[b]Why #$rank ($gpu x$n)[/b]", rank=str(plan.rank), gpu=plan.gpu, n=str(plan.count)
                )
            )
            out += _bullets(plan.reasons)
            if plan.rules:
                out.append(Content.from_markup("[b]Rules that fired[/b]"))
                out += [
                    Content.from_markup(
                        "- [$accent]$id[/] ($kind): $msg [$text-muted]$src[/]",
                        id=r.id,
                        kind=r.kind,
                        msg=r.message,
                        src=f"[{r.source}]",
                    )
                    for r in plan.rules
                ]
        if plan is not None and plan.configuration:
            out += configuration_lines(plan)
        advice = list(plan.advice if plan else ()) + [
            r.message for r in report.job_advice if r.kind == "advice"
        ]
        if advice:
            out.append(Content.from_markup("[b]Advice[/b]"))
            out += _bullets(list(dict.fromkeys(advice)))
        out.append(Content.from_markup("[b]Assumed[/b]"))
        assumed = [_said(a) for a in report.job.assumed]
        out += _bullets((*assumed, f"efficiency: {report.efficiency_source}"), "$text-muted")
        if report.notes:
            out += _bullets([_said(n) for n in report.notes], "$text-muted")
        return out


class WhyNotPanel(PlanPanel):
    """Why the other GPU types and counts are not in the table; what would make a plan fit."""

    def lines(self, report: Report, plan: PlanOut | None) -> list[Content]:
        """Suggestions (when nothing fits) and the why-not lines."""
        out: list[Content] = []
        if report.nothing_fits:
            out.append(Content.from_markup("[b $error]No plan fits.[/]"))
            if report.suggestions:
                out.append(Content.from_markup("[b]What would[/b]"))
                out += _bullets([s.phrase(label(s.field)) for s in report.suggestions])
        if report.why_not:
            out.append(Content.from_markup("[b]Why not[/b]"))
            out += _bullets(report.why_not)
        return out or [Content("Every GPU type in the catalogue is in the table above.")]
