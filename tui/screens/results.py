"""Provides ResultsScreen: ranked plans, the chosen plan's details, the cost-time front, budget, deadline."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, LoadingIndicator, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from advisor.question.errors import AdvisorError
from tui.engine import Engine
from tui.form import adjust_constraints
from tui.formatting import job_line
from tui.messages import ExportFailed, ExportWritten, OperationsReady, RecommendFailed, ReportReady
from tui.screens.checklist import ChecklistScreen
from tui.screens.confirm import ConfirmDialog
from tui.screens.export import ExportDialog
from tui.widgets.field import FieldRow
from tui.widgets.footer import Footer
from tui.widgets.front_chart import FrontChart
from tui.widgets.ops_view import OperationsPanel
from tui.widgets.plan_table import PlanTable
from tui.widgets.plan_views import AdvicePanel, CostPanel, MemoryPanel, PlanPanel, StepPanel, WhyNotPanel

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut, Report
    from advisor.job.inputs import Constraints, Workload

RECOMPUTE_DELAY_S = 0.6


def default_export_name(report: Report) -> str:
    """'gpu-plan-llama-2-70b.toml' in the current directory."""
    slug = re.sub(r"[^a-z0-9.\-]+", "-", report.job.model.lower()).strip("-") or "job"
    return f"gpu-plan-{slug}.toml"


class ResultsScreen(Screen[None]):
    """The answer: a ranked table; for the highlighted plan, memory, cost, rules, why-nots and the front."""

    AUTO_FOCUS = "#plans"
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Back to the wizard (values kept)", id="results-back"),
        Binding("e", "export", "Export", tooltip="Write the recommendation as TOML", id="results-export"),
        Binding(
            "c",
            "plan_checklist",
            "Plan checks",
            tooltip="Checklist entries that concern the selected plan",
            id="results-checklist",
        ),
        Binding(
            "b", "focus_budget", "Budget", tooltip="Change the budget or the deadline", id="results-budget"
        ),
    ]

    @dataclass
    class ConstraintsAdjusted(Message):
        """Budget or deadline changed here; the wizard mirrors the values."""

        values: dict[str, Any]

    def __init__(self, engine: Engine, workload: Workload, constraints: Constraints) -> None:
        super().__init__()
        self.engine = engine
        self.workload = workload
        self.constraints = constraints
        self.report: Report | None = None
        self._generation = 0
        self._in_flight: int | None = None
        """The generation of the ranking running now, if any."""
        self._ops_generation = 0
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        """Summary, budget/deadline, table, detail tabs, footer."""
        c = self.constraints
        yield Static(id="job-summary")
        with Horizontal(id="adjust"):
            yield FieldRow(
                "budget_usd",
                "Budget $",
                Input(_fmt(c.budget_usd), placeholder="no limit", id="budget-usd", select_on_focus=False),
            )
            yield FieldRow(
                "deadline_hours",
                "Deadline h",
                Input(_fmt(c.deadline_hours), placeholder="none", id="deadline-hours", select_on_focus=False),
            )
            yield Static(id="results-status")
        yield LoadingIndicator(id="results-loading")
        yield PlanTable(id="plans")
        with TabbedContent(id="plan-tabs"):
            with TabPane("Memory", id="tab-memory"), VerticalScroll():
                yield MemoryPanel(id="memory-panel")
            with TabPane("Cost", id="tab-cost"), VerticalScroll():
                yield CostPanel(id="cost-panel")
            with TabPane("Step", id="tab-step"), VerticalScroll():
                yield StepPanel(id="step-panel")
            with TabPane("Rules & advice", id="tab-advice"), VerticalScroll():
                yield AdvicePanel(id="advice-panel")
            with TabPane("Why not", id="tab-whynot"), VerticalScroll():
                yield WhyNotPanel(id="whynot-panel")
            with TabPane("Cost vs time", id="tab-front"):
                yield FrontChart(id="front-chart")
            with TabPane("Operations", id="tab-ops"), VerticalScroll():
                yield OperationsPanel(id="ops-panel")
        yield Footer()

    def on_mount(self) -> None:
        """Start the first recommendation."""
        self.query_one("#deadline-hours").parent.display = self.workload.kind != "inference"  # type: ignore[union-attr]
        self.recompute()

    # Recommendation worker --------------------------------------------------------------------------

    def ask(self, workload: Workload, constraints: Constraints) -> None:
        """Answer another question here (Find plans pressed again): a new one is ranked, the same is not."""
        if (workload, constraints) == (self.workload, self.constraints):
            return
        self.workload, self.constraints = workload, constraints
        self.query_one("#budget-usd", Input).value = _fmt(constraints.budget_usd)
        self.query_one("#deadline-hours", Input).value = _fmt(constraints.deadline_hours)
        self.query_one("#deadline-hours").parent.display = workload.kind != "inference"  # type: ignore[union-attr]
        self.recompute()

    def recompute(self) -> None:
        """Ask the core again with the current constraints. One ranking runs at a time: a question asked
        while one runs is started when it ends (a thread cannot be stopped; its stale answer is dropped)."""
        self._generation += 1
        self.query_one("#results-loading").display = True
        self.query_one("#results-status", Static).update("Ranking plans...")
        if self._in_flight is None:
            self._start_ranking()

    def _start_ranking(self) -> None:
        self._in_flight = self._generation
        self._recommend(self.workload, self.constraints, self._generation)

    def _ranking_ended(self, generation: int) -> bool:
        """Note a ranking's end; True when its answer is the latest question's (else the latest starts)."""
        if generation == self._in_flight:
            self._in_flight = None
        if generation == self._generation:
            return True
        if self._in_flight is None:
            self._start_ranking()
        return False

    @work(thread=True, exclusive=True, exit_on_error=False, group="recommend", description="rank plans")
    def _recommend(self, workload: Workload, constraints: Constraints, generation: int) -> None:
        try:
            report = self.engine.recommend(workload, constraints)
        except AdvisorError as exc:
            self.post_message(RecommendFailed(str(exc), generation))
            return
        except Exception as exc:  # noqa: BLE001 - a worker thread: the screen reports any failure instead of dying
            self.post_message(RecommendFailed(f"{type(exc).__name__}: {exc}", generation))
            return
        self.post_message(ReportReady(report, generation))

    @on(ReportReady)
    def _report_ready(self, message: ReportReady) -> None:
        if not self._ranking_ended(message.generation):
            return  # a newer question is on its way
        report = self.report = message.report
        self.query_one("#results-loading").display = False
        self.query_one("#job-summary", Static).update(
            f"[b]{_esc(job_line(report))}[/b]\n[$text-muted]{_esc(report.prices_line())}[/]"
        )
        table = self.query_one(PlanTable)
        table.show(report)
        table.display = bool(report.plans)
        status = (
            f"best {len(report.plans)} of {report.plans_considered} plans that fit; * on the front"
            if report.plans
            else "[$error]No plan fits: see Why not[/]"
        )
        self.query_one("#results-status", Static).update(status)
        if report.nothing_fits:
            self.query_one(TabbedContent).active = "tab-whynot"
        self._show_plan()
        self.refresh_bindings()

    @on(RecommendFailed)
    def _recommend_failed(self, message: RecommendFailed) -> None:
        if not self._ranking_ended(message.generation):
            return
        self.query_one("#results-loading").display = False
        self.query_one("#results-status", Static).update(
            f"[$error]{_esc(message.error)}[/] (Esc: back to the wizard)"
        )

    @on(DataTable.RowHighlighted, "#plans")
    def _plan_highlighted(self) -> None:
        self._show_plan()

    def _show_plan(self) -> None:
        if self.report is None:
            return
        plan = self.query_one(PlanTable).selected
        for panel in self.query(PlanPanel):
            if not isinstance(panel, OperationsPanel):
                panel.show(self.report, plan)
        self.query_one(FrontChart).show(self.report, plan)
        ops_panel = self.query_one(OperationsPanel)
        ops_panel.show_ops(self.report, None)
        if plan is not None:
            self._ops_generation += 1
            self._operations(self.report, plan, self._ops_generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="operations", description="operations plan")
    def _operations(self, report: Report, plan: PlanOut, generation: int) -> None:
        try:
            ops = self.engine.plan_operations(report, plan)
        except Exception as exc:  # noqa: BLE001 - the tab says so; the rest of the screen is unaffected
            self.app.call_from_thread(
                self.notify,
                f"{type(exc).__name__}: {exc}",
                title="Could not work out the operations plan",
                severity="error",
            )
            return
        if not get_current_worker().is_cancelled:
            self.post_message(OperationsReady(ops, generation))

    @on(OperationsReady)
    def _operations_ready(self, message: OperationsReady) -> None:
        if message.generation == self._ops_generation and self.report is not None:
            self.query_one(OperationsPanel).show_ops(self.report, message.ops)

    # Budget and deadline ----------------------------------------------------------------------------

    @on(Input.Changed, "#adjust Input")
    def _adjust_typed(self) -> None:
        """Validate as the user types; recompute once typing pauses."""
        if self._timer is not None:
            self._timer.stop()
        if self._read_adjustment() is not None:
            self._timer = self.set_timer(RECOMPUTE_DELAY_S, self._apply_adjustment)

    @on(Input.Submitted, "#adjust Input")
    def _adjust_submitted(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._apply_adjustment()
        self.query_one(PlanTable).focus()

    def _read_adjustment(self) -> Constraints | None:
        budget = self.query_one("#budget-usd", Input).value
        deadline = self.query_one("#deadline-hours", Input).value
        constraints, errors = adjust_constraints(self.constraints, budget, deadline)
        for row in self.query("#adjust FieldRow").results(FieldRow):
            row.show_message(errors.get(row.field))
        return constraints

    def _apply_adjustment(self) -> None:
        constraints = self._read_adjustment()
        if constraints is None or constraints == self.constraints:
            return
        self.constraints = constraints
        self.post_message(
            self.ConstraintsAdjusted(
                {
                    "budget_usd": self.query_one("#budget-usd", Input).value,
                    "deadline_hours": self.query_one("#deadline-hours", Input).value,
                }
            )
        )
        self.recompute()

    def action_focus_budget(self) -> None:
        """Put the cursor in the budget field."""
        self.query_one("#budget-usd", Input).focus()

    # Navigation, export, checklist ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Export and the plan checklist wait for a report with plans."""
        if action in ("export", "plan_checklist"):
            return True if self.report is not None and self.report.plans else None
        return True

    def action_back(self) -> None:
        """Back to the wizard."""
        self.dismiss()

    def action_plan_checklist(self) -> None:
        """The checklist entries that concern the selected plan."""
        plan = self.query_one(PlanTable).selected
        knowledge = getattr(self.app, "knowledge", None)
        if self.report is None or plan is None or knowledge is None:
            return
        ids = self.engine.entries_for_plan(self.report, plan)
        self.app.push_screen(ChecklistScreen(self.engine, knowledge, only=ids, plan=plan))

    def action_export(self, path_text: str | None = None, error: str = "") -> None:
        """Ask for a path, confirm an overwrite, then write in a worker."""
        if self.report is None or not self.report.plans:
            return
        default = path_text or default_export_name(self.report)
        if getattr(self.app, "served_dir", None) is not None:
            self._export_served(default)
            return
        self.app.push_screen(ExportDialog(default, error), self._export_path_chosen)

    def _export_served(self, default: str) -> None:
        """In a browser: a file name only, written in the session's folder and sent as a download."""
        from tui import served

        def chosen(path: Path | None) -> None:
            if path is not None and self.report is not None:
                served.deliver_export(self, self.engine, self.report, self.app.served_dir, str(path))  # type: ignore[attr-defined]  # served_dir: GpuAdvisorApp's

        self.app.push_screen(ExportDialog(default, label=served.LABEL, rule=served.name_problem), chosen)

    def _export_path_chosen(self, path: Path | None) -> None:
        if path is None:
            self.notify("Nothing was saved.", title="Export cancelled")
            return
        if path.is_dir():
            self.action_export(str(path), f"{path} is a folder: add a file name.")
        elif not path.parent.exists():

            def create(yes: bool | None) -> None:
                if yes:
                    self._create_folder_and_write(path)
                else:
                    self.action_export(str(path), f"Nothing saved: the folder {path.parent} does not exist.")

            self.app.push_screen(
                ConfirmDialog(
                    f"The folder {path.parent} does not exist. Create it?", "Yes, create it", yes_is_safe=True
                ),
                create,
            )
        elif path.exists():

            def confirmed(replace: bool | None) -> None:
                if replace:
                    self._write(path)
                else:
                    self.action_export(str(path), f"Nothing saved: {path.name} was kept as it was.")

            self.app.push_screen(ConfirmDialog(f"{path} exists. Replace it?"), confirmed)
        else:
            self._write(path)

    def _create_folder_and_write(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.action_export(str(path), f"Could not create {path.parent}: {exc.strerror or exc}")
            return
        self._export_path_chosen(path)

    def _write(self, path: Path) -> None:
        assert self.report is not None
        self._write_export(self.report, path)

    @work(thread=True, exit_on_error=False, group="export", description="write TOML export")
    def _write_export(self, report: Report, path: Path) -> None:
        try:
            self.post_message(ExportWritten(self.engine.write_export(report, path)))
        except OSError as exc:
            self.post_message(ExportFailed(path, exc.strerror or str(exc)))
        except Exception as exc:  # noqa: BLE001 - reported in the dialog rather than lost in a failed worker
            self.post_message(ExportFailed(path, f"{type(exc).__name__}: {exc}"))

    @on(ExportWritten)
    def _export_written(self, message: ExportWritten) -> None:
        self.notify(f"Saved {message.path.resolve()}", title="Exported")

    @on(ExportFailed)
    def _export_failed(self, message: ExportFailed) -> None:
        """Nothing is lost: the dialog opens again with the same path and the reason."""
        self.action_export(str(message.path), f"Could not write: {message.error}")


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}" if value < 1e6 else f"{value:.0f}"


def _esc(text: str) -> str:
    """Escape markup in text that comes from data."""
    return text.replace("[", r"\[")
