"""Provides WizardScreen: three validated steps that turn answers into a Workload and Constraints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Button, ContentSwitcher, Input, SelectionList, Static

from tui.form import (
    DEFAULTS,
    FORM,
    INFERENCE_ONLY,
    STEP_FIELDS,
    STEP_TITLES,
    TRAINING_ONLY,
    Checked,
    catalogue_model,
    check,
)
from tui.presets import preset
from tui.widgets.budget_step import BudgetStep
from tui.widgets.choice_list import ChoiceList
from tui.widgets.field import FieldRow
from tui.widgets.footer import Footer
from tui.widgets.model_step import ModelStep
from tui.widgets.segmented import Segmented
from tui.widgets.workload_step import WorkloadStep

if TYPE_CHECKING:
    from advisor.catalog import Knowledge
    from advisor.job.inputs import Constraints, Workload

STEPS = (WorkloadStep, ModelStep, BudgetStep)


class WizardScreen(Screen[None]):
    """Workload, then model, then budget and constraints; Next stays disabled until the step is valid."""

    BINDINGS = [
        Binding(
            "ctrl+n", "next", "Next", tooltip="Go to the next step (when this one is valid)", id="wizard-next"
        ),
        Binding(
            "escape", "back", "Back", tooltip="Go back a step; what you entered is kept", id="wizard-back"
        ),
    ]

    step: reactive[int] = reactive(0, bindings=True)

    @dataclass
    class Completed(Message):
        """The user finished the wizard with a valid question."""

        workload: Workload
        constraints: Constraints

    def __init__(self) -> None:
        super().__init__()
        self._values: dict[str, Any] = dict(DEFAULTS)
        self._checked: Checked | None = None
        self._revalidate_pending = False
        self._nav_state: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        """Step bar, the steps in a switcher (later steps are mounted when first shown), Back/Next, footer."""
        yield Static(id="step-bar")
        with ContentSwitcher(initial="step-0", id="steps"):
            yield WorkloadStep(id="step-0")
        with Horizontal(id="wizard-nav"):
            yield Static(id="wizard-status", markup=False)
            yield Button("Back", id="back")
            yield Button("Next", id="next", variant="primary")
        yield Footer()

    async def on_mount(self) -> None:
        """Follow the app's knowledge (it loads in a worker after the first paint)."""
        self.watch(self.app, "knowledge", lambda _knowledge: self.revalidate())
        await self._show_step()

    @property
    def knowledge(self) -> Knowledge | None:
        """The loaded knowledge, or None while it loads."""
        return getattr(self.app, "knowledge", None)

    # Values ---------------------------------------------------------------------------------------

    def rows(self) -> dict[str, FieldRow]:
        """The field rows of the steps shown so far, by field id."""
        return {row.field: row for row in self.query(FieldRow)}

    def values(self) -> dict[str, Any]:
        """Every field's value, including the fields of steps not shown yet."""
        return dict(self._values)

    def apply_values(self, values: Mapping[str, Any], reset: bool = False) -> None:
        """Set fields (a preset, or budget/deadline changed on the results screen)."""
        if reset:
            self._values = dict(DEFAULTS)
        self._values.update(values)
        for name, row in self.rows().items():
            # Only the fields being set: writing the others back from the form's copy could undo a key the
            # user typed a moment ago whose Changed message has not arrived yet.
            if reset or name in values:
                row.set_value(self._values[name])
        self.revalidate()

    def restart(self) -> None:
        """Every field back to its default, and the first step (shown from its top)."""
        self.apply_values({}, reset=True)
        if self.step == 0:
            self.call_later(self._show_step)
        self.step = 0

    @property
    def checked(self) -> Checked | None:
        """The latest validation of the whole form."""
        return self._checked

    # Validation -----------------------------------------------------------------------------------

    @on(Input.Changed)
    @on(ChoiceList.Changed)
    @on(Segmented.Changed)
    @on(SelectionList.SelectedChanged)
    def _field_changed(
        self, event: Input.Changed | ChoiceList.Changed | Segmented.Changed | SelectionList.SelectedChanged
    ) -> None:
        row = event.control.parent if event.control is not None else None
        if not isinstance(row, FieldRow):
            return
        previous = self._values.get(row.field)
        self._values[row.field] = row.value
        if row.field == "kind":
            self._kind_changed(previous, row.value)
        # A preset changes a dozen fields at once: check the form once, after they have all changed.
        if not self._revalidate_pending:
            self._revalidate_pending = True
            self.call_after_refresh(self.revalidate)

    def _kind_changed(self, old: object, new: object) -> None:
        """Between training and serving, the other kind's values (a preset's epochs, deadline or monthly
        budget) would silently shape the new job: they go back to their defaults."""
        if not old or not new or (old == "inference") == (new == "inference"):
            return
        stale = (TRAINING_ONLY if new == "inference" else INFERENCE_ONLY) | {"budget_period"}
        self.apply_values({name: DEFAULTS[name] for name in stale})

    def revalidate(self) -> None:
        """Check every field, show each message beside its field, enable or disable Next."""
        self._revalidate_pending = False
        checked = check(self._values, self.knowledge)
        self._checked = checked
        for step in self.query(ModelStep):
            step.describe_model(catalogue_model(self.knowledge, str(self._values.get("model", ""))))
        for name, row in self.rows().items():
            visible = name in checked.applicable
            if row.display != visible:
                row.display = visible
            row.show_message(checked.errors.get(name))
        self._update_nav()

    def _update_nav(self) -> None:
        valid = self._checked is not None and self._checked.step_valid(self.step)
        status = ""
        if self.knowledge is None:
            status = "Loading the catalogue..."
        elif not valid and self._checked is not None:
            bad = [
                n
                for n in STEP_FIELDS[self.step]
                if n in self._checked.errors and n in self._checked.applicable
            ]
            empty = [n for n in bad if self._values.get(n) in ("", ())]
            parts = [f"{len(bad) - len(empty)} field(s) to fix"] if len(bad) > len(empty) else []
            parts += [f"{len(empty)} to fill in"] if empty else []
            status = ", ".join(parts)
            if self.step > 0 and FORM in self._checked.errors and not bad:
                status = self._checked.errors[FORM]
        state = (valid, self.step, status)
        if state == self._nav_state:
            return  # nothing the buttons, the status or the footer show has changed
        self._nav_state = state
        next_button = self.query_one("#next", Button)
        next_button.disabled = not valid
        next_button.label = "Find plans" if self.step == len(STEP_TITLES) - 1 else "Next"
        self.query_one("#back", Button).disabled = self.step == 0
        self.query_one("#wizard-status", Static).update(status)
        self.refresh_bindings()

    # Navigation -----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Next is shown dimmed until the step is valid; Back is dimmed on the first step."""
        if action == "next":
            return True if self._checked is not None and self._checked.step_valid(self.step) else None
        if action == "back":
            return True if self.step > 0 else None
        return True

    async def watch_step(self, step: int) -> None:
        """Show the step and focus its first field."""
        if self.is_mounted:
            await self._show_step()

    async def _show_step(self) -> None:
        switcher = self.query_one("#steps", ContentSwitcher)
        step_id = f"step-{self.step}"
        if not switcher.query(f"#{step_id}"):
            # Mounting a step costs tens of widgets: the later steps are built when first reached.
            step = STEPS[self.step](id=step_id)
            step.display = False
            await switcher.mount(step)
            for row in step.query(FieldRow):
                row.set_value(self._values[row.field])
            self.revalidate()
        switcher.current = step_id
        # Each step opens at its top with its first field focused: a step scrolled down earlier (before a
        # restart, a preset or Next) would put the cursor in a field off screen.
        shown = switcher.query_one(f"#{step_id}", VerticalScroll)
        shown.scroll_home(animate=False, immediate=True)
        marks = []
        for i, title in enumerate(STEP_TITLES):
            style = "$text-accent bold" if i == self.step else "$text-muted"
            marks.append(f"[{style}]{i + 1} {title}[/]")
        self.query_one("#step-bar", Static).update(" [$text-muted]>[/] ".join(marks))
        self._update_nav()
        first = next((row.control for row in shown.query(FieldRow) if row.display), None)
        if first is not None:
            first.focus(scroll_visible=False)

    def _read_fields(self) -> None:
        """Take every shown field's value as it is now: a key typed just before Ctrl+N has not yet reached
        the form through its Changed message, and the answer must use what is on screen."""
        for name, row in self.rows().items():
            self._values[name] = row.value
        self.revalidate()

    def action_next(self) -> None:
        """Next step, or finish on the last (on the values as they are on screen now)."""
        self._read_fields()
        checked = self._checked
        if checked is None or not checked.step_valid(self.step):
            return
        if self.step < len(STEP_TITLES) - 1:
            self.step += 1
        elif checked.workload is not None and checked.constraints is not None:
            self.post_message(self.Completed(checked.workload, checked.constraints))

    def action_back(self) -> None:
        """Previous step; values are kept."""
        if self.step > 0:
            self.step -= 1

    @on(Button.Pressed, "#next")
    def _next_pressed(self) -> None:
        self.action_next()

    @on(Button.Pressed, "#back")
    def _back_pressed(self) -> None:
        self.action_back()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        """Enter moves to the next field, and after the last one to the Back and Next buttons."""
        self.focus_next()

    @on(WorkloadStep.PresetChosen)
    def _preset_chosen(self, event: WorkloadStep.PresetChosen) -> None:
        """Fill every step from the preset and go to the model step to review it."""
        self.apply_values(preset(event.preset_id).values, reset=True)
        self.call_after_refresh(self._after_preset)

    def _after_preset(self) -> None:
        self.revalidate()
        if self._checked is not None and self._checked.step_valid(0):
            self.step = 1
