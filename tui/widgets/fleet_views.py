"""Provides the Fleet screen's views: KPI tiles (green or red against the guide), the week's utilisation
chart, and the portfolio and cost tables' rows."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from textual.app import ComposeResult, RenderResult
from textual.color import Color
from textual.containers import Grid
from textual.widgets import Static
from textual_plotext import PlotextPlot

if TYPE_CHECKING:
    from advisor.fleet.plan import FleetPlan, Kpi

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def kpi_value(kpi: Kpi) -> str:
    """'71% [69-73%]' or '2.1 min [0.4-3.8]'."""
    v = kpi.value
    if math.isnan(v.mean):
        return "-"
    if kpi.unit == "fraction":
        return f"{v.mean:.1%} [{v.low:.1%}-{v.high:.1%}]"
    if kpi.unit == "per GPU-month":
        return f"{v.mean:.2%}/mo [{v.low:.2%}-{v.high:.2%}]"
    return f"{_n(v.mean)} {kpi.unit} [{_n(v.low)}-{_n(v.high)}]"


def _n(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


class KpiTile(Static):
    """One KPI: its name, value with interval, and the guide's target; green or red by the verdict."""

    DEFAULT_CSS = """
    KpiTile { width: 1fr; height: 5; padding: 0 1; border: round $panel; }
    KpiTile.-green { border: round $success; }
    KpiTile.-green .verdict { color: $success; }
    KpiTile.-red { border: round $error; }
    """

    def __init__(self, kpi: Kpi) -> None:
        verdict = {"green": "met", "red": "missed"}.get(kpi.verdict)
        target = f"target {kpi.target}: {verdict}" if verdict else "the guide sets no target"
        text = f"{kpi.name}\n{kpi_value(kpi)}\n{target}"
        super().__init__(text, markup=False, classes=f"-{kpi.verdict}" if kpi.verdict != "-" else "")
        self.kpi = kpi


class KpiTiles(Grid):
    """Tiles, one per KPI, three to a row."""

    DEFAULT_CSS = "KpiTiles { grid-size: 3; grid-gutter: 0 1; grid-rows: 5; height: auto; }"

    def __init__(self, plan: FleetPlan, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.plan = plan

    def compose(self) -> ComposeResult:
        """One tile per KPI."""
        for kpi in self.plan.kpis:
            yield KpiTile(kpi)


class WeekChart(PlotextPlot):
    """Mean GPU utilisation by hour of the week, against the guide's 75% line."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._plan: FleetPlan | None = None

    def show(self, plan: FleetPlan) -> None:
        """Plot this plan's week."""
        self._plan = plan
        self.replot()

    def _rgb(self, variable: str) -> tuple[int, int, int]:
        return Color.parse(self.app.theme_variables[variable]).rgb

    def replot(self) -> None:
        """Rebuild the plot (plotext draws at render time)."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if self._plan is None:
            plt.title("No plan yet")
            self.refresh()
            return
        week = list(self._plan.week_utilisation)
        hours = list(range(len(week)))
        plt.plot(hours, [u * 100 for u in week], color=self._rgb("primary"), marker="braille")
        target = next((k for k in self._plan.kpis if k.name == "GPU utilisation"), None)
        if target is not None:
            plt.hline(75, color=self._rgb("warning"))
        plt.ylim(0, 100)
        plt.xticks([24 * d for d in range(7)], list(DAYS))
        plt.title("GPU utilisation over a week, % (mean of the replications; the line: the guide's 75%)")
        self.refresh()

    def render(self) -> RenderResult:
        """The plot, or a line saying it cannot be drawn at this size."""
        try:
            return super().render()
        except (ValueError, ZeroDivisionError, IndexError) as exc:
            return f"The chart cannot be drawn at this size ({type(exc).__name__})."


def job_rows(plan: FleetPlan) -> list[tuple[str, ...]]:
    """The portfolio table's rows."""
    rows: list[tuple[str, ...]] = []
    for j in plan.jobs:
        rate = f"{j.requests_per_s:g} req/s" if j.requests_per_s else f"{j.per_week:g}/week"
        rows.append(
            (j.name, j.owner, j.priority, f"{j.gpu} x{j.gpus}", f"{j.hours:,.1f} h" if j.hours else "-", rate,
             f"{j.deadline_hours:g} h" if j.deadline_hours else "-")
        )  # fmt: skip
    return rows


def cost_rows(plan: FleetPlan) -> list[tuple[str, ...]]:
    """The cost split per owner: the guide's columns plus space, and the total."""
    return [
        (a.owner, a.cls, f"{a.gpu_hours:,.0f}", f"${a.hardware_usd:,.0f}", f"${a.power_usd:,.0f}",
         f"${a.maintenance_usd:,.0f}", f"${a.space_usd:,.0f}", f"${a.total_usd:,.0f}")
        for a in plan.attribution
    ]  # fmt: skip


def summary(plan: FleetPlan) -> str:
    """The plan in two lines: the design, its cost, the ratio and the reserve."""
    r, res, b = plan.ratio, plan.reserve, plan.buying
    cloud = f"${b.cloud_usd:,.0f}" if b.cloud_usd is not None else "no price"
    return (
        f"{plan.chosen}: TCO ${plan.tco_usd:,.0f} over {b.years:g} years (cloud: {cloud}); "
        f"simulated {plan.weeks:g} weeks x {plan.replications} runs\n"
        f"train:inference {r['implied']} (guide {r['guide']}); elastic reserve needed "
        f"{res['needed_fraction']:.0%} (guide {res['guide_fraction']:.0%})"
    )
