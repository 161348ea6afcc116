"""Provides BudgetStep: the wizard's third step: budget, deadline, deployment, pricing, filters, objective."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import SelectionList, Static

from tui.form import STEP_FIELDS
from tui.widgets.field import field_row

if TYPE_CHECKING:
    from advisor.catalog import Knowledge


class BudgetStep(VerticalScroll):
    """Step 3: what the answer must respect and what it optimises."""

    HELP = (
        "Budget accepts 20000, 20k or $20k; deadline takes hours (72), days (3d), weeks (2w), months (1mo). "
        "Leave providers and GPUs unticked to allow all of them."
    )

    def compose(self) -> ComposeResult:
        """Money and time first, then where it runs, then the filters and the objective."""
        yield Static("What must the plan respect?", classes="step-heading")
        for name in STEP_FIELDS[2]:
            yield field_row(name)

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
