"""Provides PlanTable: the ranked plans of a report, one row each; the highlighted row is the selected one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.geometry import Size
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
        # Cost and time come right after the GPU so they stay on screen in an 80-column terminal.
        heads = (
            ("#", "rank"),
            ("GPU", "gpu"),
            ("n", "count"),
            ("cost / month" if inference else "cost", "cost"),
            ("TTFT / token" if inference else "time P10-P90", "time"),
            ("GB/GPU", "memory"),
            ("nodes", "nodes"),
            ("parallelism", "parallelism"),
        )
        rows = [_cells(plan, inference) for plan in report.plans]
        self.clear(columns=True)
        # Each column gets its width now, from its header and its cells. Left to the table, the cells are
        # measured only when it next goes idle, and a frame painted before that (a busy screen after a
        # re-rank) cuts every column to its header and is kept until the cursor moves.
        widths = [max([len(label), *(row[i].cell_len for row in rows)]) for i, (label, _) in enumerate(heads)]
        for (label, key), width in zip(heads, widths, strict=True):
            self.add_column(label, key=key, width=width)
        self._plans = report.plans
        for plan, row in zip(report.plans, rows, strict=True):
            self.add_row(*row, key=str(plan.rank))
        # The size too (the table's height is its rows'), so the next layout holds every row at once.
        header = self.header_height if self.show_header else 0
        self.virtual_size = Size(sum(w + 2 * self.cell_padding for w in widths), len(rows) + header)
        if report.plans:
            self.move_cursor(row=min(keep, len(report.plans) - 1))
        self.refresh(layout=True)

    @property
    def selected(self) -> PlanOut | None:
        """The plan under the cursor."""
        if not self._plans or not 0 <= self.cursor_row < len(self._plans):
            return None
        return self._plans[self.cursor_row]


def _cells(plan: PlanOut, inference: bool) -> tuple[Text, ...]:
    """One plan's row, as plain text (never read as markup)."""
    return (
        Text(f"{plan.rank}{'*' if plan.on_front else ''}"),
        Text(plan.gpu),
        Text(str(plan.count), justify="right"),
        Text(plan_cost(plan, inference)),
        Text(plan_timing(plan)),
        Text(f"{plan.memory_per_gpu_gb:.0f}/{plan.memory.capacity_gb:g}", justify="right"),
        Text(str(plan.nodes), justify="right"),
        Text(plan.parallelism),
    )
