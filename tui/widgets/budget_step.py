"""Provides BudgetStep: the wizard's third step: budget, deadline, deployment, pricing, filters, objective."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, SelectionList, Static

from tui.widgets.field import FieldRow
from tui.widgets.segmented import Segmented

if TYPE_CHECKING:
    from advisor.catalog import Knowledge


def _select(field: str, options: tuple[str, ...], default: str) -> Segmented:
    return Segmented(options, default, id=field.replace("_", "-"))


class BudgetStep(VerticalScroll):
    """Step 3: what the answer must respect and what it optimises."""

    HELP = (
        "Budget accepts 20000, 20k or $20k; deadline takes hours (72), days (3d), weeks (2w), months (1mo). "
        "Leave providers and GPUs unticked to allow all of them."
    )

    def compose(self) -> ComposeResult:
        """Money and time first, then where it runs, then the filters and the objective."""
        yield Static("What must the plan respect?", classes="step-heading")
        yield FieldRow(
            "budget_usd",
            "Budget (USD)",
            Input(placeholder="e.g. 20k; blank: no limit", id="budget-usd", select_on_focus=False),
            hint="the most you want to spend",
        )
        yield FieldRow(
            "budget_period",
            "Budget per",
            _select("budget_period", ("job", "month"), "job"),
            hint="the whole job, or each month",
        )
        yield FieldRow(
            "deadline_hours",
            "Deadline",
            Input(placeholder="e.g. 72, 3d, 2w; blank: none", id="deadline-hours", select_on_focus=False),
            hint="P90 finish time must be within it",
        )
        yield FieldRow(
            "deployment",
            "Deployment",
            _select("deployment", ("cloud", "on-prem"), "cloud"),
            hint="rent in the cloud, or buy (amortised TCO)",
        )
        yield FieldRow(
            "pricing",
            "Pricing plan",
            _select("pricing", ("on-demand", "spot", "reserved"), "on-demand"),
            hint="spot: cheaper, may be preempted",
        )
        yield FieldRow(
            "objective",
            "Optimise for",
            _select("objective", ("balanced", "cheapest", "fastest"), "balanced"),
            hint="how plans are ranked",
        )
        yield FieldRow("providers", "Providers", SelectionList[str](id="providers"), hint="none ticked: all")
        yield FieldRow("gpus", "GPUs", SelectionList[str](id="gpus"), hint="none ticked: all")

    def on_mount(self) -> None:
        """List the catalogue's providers and GPUs once the app has loaded it."""
        self.watch(self.app, "knowledge", self._knowledge_changed)

    def _knowledge_changed(self, knowledge: Knowledge | None) -> None:
        """List the providers and GPUs of the loaded knowledge, keeping what is already ticked."""
        if knowledge is None:
            return
        providers = sorted({o.provider for o in knowledge.offers})
        for field, items in (
            ("providers", [(p, p) for p in providers]),
            ("gpus", [(f"{g.id}  {g.memory_gb:g} GB", g.id) for g in knowledge.gpus]),
        ):
            selection = self.query_one(f"#{field}", SelectionList)
            ticked = set(selection.selected)
            selection.clear_options()
            selection.add_options([(label, value, value in ticked) for label, value in items])
