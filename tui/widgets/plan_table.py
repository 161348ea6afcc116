"""Provides PlanTable: the ranked plans of a report, one row each; the highlighted row is the selected one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import DataTable

from tui.formatting import plan_cost, plan_timing

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut, Report


class PlanTable(DataTable[str | Text]):
    """Rank, GPU, count, cost range, time P10-P90 (or latency), memory per GPU, nodes and parallelism."""

    HELP = "Up/Down selects a plan; the tabs below show its memory, cost, rules and the cost-vs-time front."

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._plans: tuple[PlanOut, ...] = ()

    def show(self, report: Report) -> None:
        """Replace the rows with the report's plans, keeping the cursor on the same rank when possible."""
        inference = report.job.kind == "inference"
        keep = self.cursor_row
        self.clear(columns=True)
        # Cost and time come right after the GPU so they stay on screen in an 80-column terminal.
        self.add_column("#", key="rank")
        self.add_column("GPU", key="gpu")
        self.add_column("n", key="count")
        self.add_column("cost / month" if inference else "cost", key="cost")
        self.add_column("TTFT / token" if inference else "time P10-P90", key="time")
        self.add_column("GB/GPU", key="memory")
        self.add_column("nodes", key="nodes")
        self.add_column("parallelism", key="parallelism")
        self._plans = report.plans
        for plan in report.plans:
            rank = Text(f"{plan.rank}{'*' if plan.on_front else ''}")
            self.add_row(
                rank,
                plan.gpu,
                Text(str(plan.count), justify="right"),
                plan_cost(plan, inference),
                plan_timing(plan),
                Text(f"{plan.memory_per_gpu_gb:.0f}/{plan.memory.capacity_gb:g}", justify="right"),
                Text(str(plan.nodes), justify="right"),
                plan.parallelism,
                key=str(plan.rank),
            )
        if report.plans:
            self.move_cursor(row=min(keep, len(report.plans) - 1))
        # New rows may want other column widths than the last ranking's: lay the table out again now.
        self.refresh(layout=True)

    @property
    def selected(self) -> PlanOut | None:
        """The plan under the cursor."""
        if not self._plans or not 0 <= self.cursor_row < len(self._plans):
            return None
        return self._plans[self.cursor_row]
