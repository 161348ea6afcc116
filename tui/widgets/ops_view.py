"""Provides OperationsPanel: the highlighted plan's operations plan, ownership cost and launch artefacts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.reactive import var

from tui.formatting import fmt_hours, gpus, money
from tui.widgets.plan_views import PlanPanel, _bullets

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut, Report
    from advisor.ops.plan import OpsPlan
    from advisor.ops.tco import TcoOut
    from tui.engine import PlanOps

SECTIONS = {
    "scaling": "Elastic scaling",
    "power": "Power policy",
    "queue": "Queues",
    "monitoring": "Monitoring targets",
    "fault_tolerance": "Fault tolerance",
    "hybrid": "Hybrid cluster",
}


class OperationsPanel(PlanPanel):
    """How to run the highlighted plan: scaling, power, queues, monitoring, faults, on-prem TCO, launch."""

    ops: var[PlanOps | None] = var(None)

    def show_ops(self, report: Report, ops: PlanOps | None) -> None:
        """Render the operations of one plan (None while they are being worked out)."""
        self.ops = ops
        self.show(report, ops.plan if ops is not None else None)

    def lines(self, report: Report, plan: PlanOut | None) -> list[Content]:
        """Every item with its reason; the TCO breakdown and buy-or-rent when on-prem; the launch command."""
        ops = self.ops
        if not report.plans:
            return [Content("No plan, so no operations plan.")]
        if ops is None or plan is None or ops.operations is None:
            return [Content("Working out how to run this plan...")]
        out = [
            Content.from_markup(
                "[b]For plan #$rank ($gpu x$n)[/b]", rank=str(plan.rank), gpu=plan.gpu, n=str(plan.count)
            )
        ]
        out += _tco_lines(ops.tco)
        out += _ops_lines(ops.operations)
        if ops.launch is not None:
            launch = ops.launch
            out.append(Content.from_markup("[b]Launch[/b]"))
            out.append(Content(launch.serve or launch.torchrun))
            files = [launch.framework_config_name, "sky-task.yaml"]
            files += ["pytorchjob.yaml"] if launch.kubeflow_job else []
            out += _bullets(
                [f"{', '.join(files)} and prometheus-rules.yaml: in the TOML export (press e)"], "$text-muted"
            )
        return out


def _tco_lines(t: TcoOut | None) -> list[Content]:
    if t is None:
        return []
    out = [
        Content.from_markup(
            "[b]Owning it[/b]: $total over $years years, $hour per used GPU-hour",
            total=money(t.total_usd),
            years=f"{t.inputs.years:g}",
            hour=f"${t.usd_per_gpu_hour:.2f}",
        )
    ]
    for line in t.lines:
        flag = f"  [{line.flag}]" if line.flag else ""
        out.append(
            Content.from_markup(
                "  $name $usd ($share)[$warning]$flag[/]",
                name=f"{line.component:<12}",
                usd=f"{money(line.usd):>10}",
                share=f"{line.share:.0%}",
                flag=flag,
            )
        )
    out += _bullets([t.buy_rent.verdict, f"cloud: {t.buy_rent.cloud}"])
    out += _bullets([f"{o.name}: {o.note}" for o in t.options], "$text-muted")
    out += _bullets(
        [f"month {s.month}: {s.gpus} {gpus(s.gpus)} ({money(s.usd)}), {s.action}" for s in t.staged],
        "$text-muted",
    )
    return out


def _ops_lines(ops: OpsPlan) -> list[Content]:
    out: list[Content] = []
    by_section: dict[str, list[Content]] = {}
    for section, item in ops.items():
        by_section.setdefault(section, []).append(
            Content.from_markup(
                "- [$accent]$name[/]: $setting [$text-muted]($reason; $source)[/]",
                name=item.name,
                setting=item.setting,
                reason=item.reason,
                source=item.source,
            )
        )
    for section, title in SECTIONS.items():
        if section in by_section:
            out.append(Content.from_markup("[b]$title[/b]", title=title))
            out += by_section[section]
        if section == "power" and ops.power_effect is not None:
            e = ops.power_effect
            out.append(
                Content.from_markup(
                    "  a $cap W cap: $kwh -> $capped kWh, $h -> $hc",
                    cap=f"{e.cap_w:.0f}",
                    kwh=f"{e.energy_kwh:,.0f}",
                    capped=f"{e.energy_kwh_capped:,.0f}",
                    h=fmt_hours(e.hours_p50),
                    hc=fmt_hours(e.hours_p50_capped),
                )
            )
    return out
