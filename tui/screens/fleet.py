"""Provides FleetScreen: plan a cluster for a portfolio file (sized and simulated in a worker), with the
portfolio, KPI tiles, a week's utilisation and the cost per owner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, DataTable, Input, Static

from tui.widgets.fleet_views import KpiTiles, WeekChart, cost_rows, job_rows, summary
from tui.widgets.footer import Footer
from tui.widgets.table_fill import fill_table

if TYPE_CHECKING:
    from advisor.fleet.plan import FleetPlan
    from tui.engine import Engine

DEFAULT_FILE = "examples/lab-portfolio.toml"
JOB_COLUMNS = ("workload", "owner", "class", "GPUs each", "hours", "arrives", "deadline")
COST_COLUMNS = ("owner", "class", "GPU-hours", "hardware", "power", "maintenance", "space", "total")


@dataclass
class FleetReady(Message):
    """The worker's plan, or the one-line reason there is none."""

    generation: int
    plan: FleetPlan | None
    error: str = ""


def fleet_plan(engine: Engine, path: str) -> FleetPlan:
    """Read the portfolio and plan it with the app's knowledge and efficiency model (blocks: workers only)."""
    from advisor.fleet.plan import plan_fleet
    from advisor.fleet.portfolio import load_portfolio

    knowledge = engine.knowledge()
    return plan_fleet(knowledge, load_portfolio(path, knowledge), engine.efficiency_model())


class FleetScreen(Screen[None]):
    """Portfolio file at the top; the plan below once the worker has sized and simulated it."""

    DEFAULT_CSS = """
    FleetScreen #fleet-bar { height: 3; }
    FleetScreen #fleet-path { width: 1fr; }
    FleetScreen #fleet-status { height: auto; padding: 0 1; }
    FleetScreen #fleet-chart { height: 14; min-height: 8; }
    FleetScreen DataTable { height: auto; max-height: 14; }
    FleetScreen .fleet-heading { padding: 1 1 0 1; text-style: bold; }
    """
    BINDINGS = [Binding("escape", "close", "Close", id="fleet-close")]

    def __init__(self, engine: Engine, path: str | None = None) -> None:
        super().__init__()
        self.engine = engine
        self.path = path
        self.plan: FleetPlan | None = None
        self._generation = 0

    def compose(self) -> ComposeResult:
        """Path and button; status; then the plan's views (filled when it arrives)."""
        with Horizontal(id="fleet-bar"):
            yield Input(self.path or DEFAULT_FILE, placeholder="portfolio TOML file", id="fleet-path")
            yield Button("Plan", id="fleet-run", variant="primary")
        yield Static("Enter a portfolio file and press Plan (Enter).", id="fleet-status", markup=False)
        with VerticalScroll(id="fleet-body"):
            yield Static("Portfolio", classes="fleet-heading")
            yield DataTable(id="fleet-jobs", cursor_type="row", zebra_stripes=True)
            yield Static(
                "KPIs against the guide's targets (95% interval over replications)",
                classes="fleet-heading",
                id="fleet-kpi-heading",
            )
            yield WeekChart(id="fleet-chart")
            yield Static(
                "Cost per owner (hardware + power + 15% maintenance, + space; idle apart)",
                classes="fleet-heading",
            )
            yield DataTable(id="fleet-costs", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        """Set the tables' columns; plan at once when a file was given."""
        self.query_one("#fleet-jobs", DataTable).add_columns(*JOB_COLUMNS)
        self.query_one("#fleet-costs", DataTable).add_columns(*COST_COLUMNS)
        if self.path:
            self.run_plan()
        else:
            self.query_one("#fleet-path", Input).focus()

    @on(Input.Submitted, "#fleet-path")
    @on(Button.Pressed, "#fleet-run")
    def run_plan(self) -> None:
        """Size and simulate the file's portfolio in a thread worker (never on the event loop)."""
        path = self.query_one("#fleet-path", Input).value.strip()
        self._generation += 1
        self.query_one("#fleet-status", Static).update(
            f"Planning {path}: sizing each GPU type, then simulating..."
        )
        self._plan(path, self._generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="fleet", description="plan a fleet")
    def _plan(self, path: str, generation: int) -> None:
        try:
            plan = fleet_plan(self.engine, path)
        except Exception as exc:  # noqa: BLE001 - any failure is shown as one line; the screen stays usable
            from advisor.question.errors import AdvisorError

            line = str(exc) if isinstance(exc, AdvisorError) else f"{type(exc).__name__}: {exc}"
            self.post_message(FleetReady(generation, None, line))
            return
        self.post_message(FleetReady(generation, plan))

    @on(FleetReady)
    def _ready(self, message: FleetReady) -> None:
        if message.generation != self._generation:
            return  # a newer request is running
        status = self.query_one("#fleet-status", Static)
        if message.plan is None:
            status.update(f"Cannot plan: {message.error}")
            return
        self.plan = plan = message.plan
        status.update(summary(plan))
        fill_table(self.query_one("#fleet-jobs", DataTable), JOB_COLUMNS, job_rows(plan))
        fill_table(self.query_one("#fleet-costs", DataTable), COST_COLUMNS, cost_rows(plan))
        for old in self.query(KpiTiles):
            old.remove()
        self.query_one("#fleet-body").mount(KpiTiles(plan), after=self.query_one("#fleet-kpi-heading"))
        self.query_one(WeekChart).show(plan)

    def action_close(self) -> None:
        """Back to where the user came from."""
        self.dismiss(None)
