"""Provides ChecklistScreen: browse and search error types, read one, tick its steps (kept on restart)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from tui.screens.confirm import ConfirmDialog
from tui.widgets.checklist_entry import entry_header, entry_references, entry_symptoms, step_prompt
from tui.widgets.footer import Footer
from tui.widgets.tick_list import TickList

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut
    from advisor.catalog import Knowledge
    from advisor.catalog.checklist import ChecklistEntry
    from advisor.catalog.userdata import ChecklistTicks
    from tui.engine import Engine


class ChecklistScreen(Screen[None]):
    """Entries on the left (all, a search, or those that concern a plan), the open entry on the right."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="checklist-close"),
        Binding("slash", "focus_search", "Search", id="checklist-search"),
        Binding("a", "show_all", "All entries", tooltip="List every error type", id="checklist-all"),
        Binding(
            "x",
            "clear_ticks",
            "Clear ticks",
            tooltip="Untick every step of the open entry (asks first)",
            id="checklist-clear",
        ),
    ]

    def __init__(
        self, engine: Engine, knowledge: Knowledge, only: list[str] | None = None, plan: PlanOut | None = None
    ) -> None:
        super().__init__()
        self.engine = engine
        self.knowledge = knowledge
        self.only = only
        self.plan = plan
        self.entries: list[ChecklistEntry] = []
        self.current: ChecklistEntry | None = None
        self._ticks: ChecklistTicks | None = None
        self._ticked: dict[str, int] = {}
        """How many steps of each entry are ticked, as the list shows it."""

    def compose(self) -> ComposeResult:
        """Search and list on the left; the entry and its steps on the right."""
        title = "Troubleshooting checklist"
        if self.plan is not None:
            title += f": entries that concern {self.plan.gpu} x{self.plan.count} (plan #{self.plan.rank})"
        yield Static(title, id="checklist-title", markup=False)
        with Horizontal(id="checklist-body"):
            with Vertical(id="checklist-left"):
                yield Input(placeholder="search: NCCL, nan, Xid...", id="checklist-query")
                yield OptionList(id="checklist-entries")
            with Vertical(id="checklist-right"):
                yield Static(id="entry-header")
                with TabbedContent(id="entry-tabs"):
                    with TabPane("Steps", id="tab-steps"):
                        yield TickList(id="entry-steps")
                    with TabPane("Symptoms", id="tab-symptoms"), VerticalScroll():
                        yield Static(id="entry-symptoms")
                    with TabPane("Remedies & sources", id="tab-references"), VerticalScroll():
                        yield Static(id="entry-references")
        yield Footer()

    def on_mount(self) -> None:
        """List the entries, then load the ticks from disk in a worker."""
        self._list(self._initial_entries())
        self.query_one("#checklist-entries", OptionList).focus()
        self._load_ticks()

    def _initial_entries(self) -> list[ChecklistEntry]:
        if self.only is None:
            return list(self.knowledge.checklist)
        by_id = {e.id: e for e in self.knowledge.checklist}
        return [by_id[i] for i in self.only if i in by_id]

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="ticks-load",
        description="read checklist ticks",
    )
    def _load_ticks(self) -> None:
        ticks = self.engine.ticks()
        self.app.call_from_thread(self._ticks_loaded, ticks)

    def _ticks_loaded(self, ticks: ChecklistTicks) -> None:
        self._ticks = ticks
        self._ticked = {e.id: len(ticks.ticked(e.id)) for e in self.knowledge.checklist}
        for entry in self.entries:
            self._mark(entry)
        self._show_steps()

    # List and search --------------------------------------------------------------------------------

    def _list(self, entries: list[ChecklistEntry]) -> None:
        self.entries = entries
        option_list = self.query_one("#checklist-entries", OptionList)
        option_list.clear_options()
        option_list.add_options(Option(self._entry_prompt(e), id=e.id) for e in entries)
        if entries:
            option_list.highlighted = 0
        else:
            self._open(None)

    def _entry_prompt(self, entry: ChecklistEntry) -> Content:
        """Title, id and category; and how many of its steps are ticked, when any are."""
        done = self._ticked.get(entry.id, 0)
        mark = Content.styled(f"  ✔ {done}/{len(entry.steps)}", "$text-success") if done else Content("")
        return Content.assemble((entry.title, "bold"), mark, "\n", (f"{entry.id} · {entry.category}", "dim"))

    def _mark(self, entry: ChecklistEntry) -> None:
        """Show the entry's ticked count in the list (when it is listed)."""
        if any(e.id == entry.id for e in self.entries):
            self.query_one("#checklist-entries", OptionList).replace_option_prompt(
                entry.id, self._entry_prompt(entry)
            )

    @on(Input.Changed, "#checklist-query")
    def _query_changed(self, event: Input.Changed) -> None:
        # Imported here: the core's loader chain would otherwise delay the app's first paint.
        from advisor.answer.checklist import find_entries

        text = event.value.strip()
        self._list(find_entries(self.knowledge, None, text) if text else self._initial_entries())

    @on(Input.Submitted, "#checklist-query")
    def _query_submitted(self) -> None:
        self.query_one("#checklist-entries", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#checklist-entries")
    def _entry_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._open(next((e for e in self.entries if e.id == event.option.id), None))

    @on(OptionList.OptionSelected, "#checklist-entries")
    def _entry_selected(self) -> None:
        """Enter moves into the steps, ready to tick."""
        self.query_one("#entry-steps", TickList).focus()

    def _open(self, entry: ChecklistEntry | None) -> None:
        self.current = entry
        self.query_one("#entry-header", Static).update(entry_header(entry, self.plan))
        self.query_one("#entry-symptoms", Static).update(entry_symptoms(entry))
        self.query_one("#entry-references", Static).update(entry_references(entry, self.plan, self.knowledge))
        self._show_steps()

    # Steps and ticks --------------------------------------------------------------------------------

    def _show_steps(self) -> None:
        steps = self.query_one("#entry-steps", TickList)
        entry = self.current
        ticked = self._ticks.ticked(entry.id) if self._ticks is not None and entry is not None else set()
        steps.set_steps(
            [step_prompt(i, s.text, s.command) for i, s in enumerate(entry.steps)] if entry else [], ticked
        )

    @on(TickList.Toggled, "#entry-steps")
    def _step_toggled(self, event: TickList.Toggled) -> None:
        if self.current is None or self._ticks is None:
            return
        self._ticked[self.current.id] = len(event.tick_list.ticked)
        self._mark(self.current)
        self._save_tick(self._ticks, self.current.id, event.index, event.done)

    @work(thread=True, exit_on_error=False, group="ticks-save", description="save a checklist tick")
    def _save_tick(self, ticks: ChecklistTicks, entry_id: str, index: int, done: bool) -> None:
        try:
            self.engine.set_tick(ticks, entry_id, index, done)
        except OSError as exc:
            self.app.call_from_thread(self.notify, f"Could not save the tick: {exc}", severity="error")

    def action_clear_ticks(self) -> None:
        """Untick every step of the open entry, once the user says so (ticks are work: not lost to a key)."""
        entry, ticks = self.current, self._ticks
        if entry is None or ticks is None:
            return
        done = len(self.query_one("#entry-steps", TickList).ticked)
        if not done:
            self.notify(f"No step of {entry.title} is ticked.")
            return

        def answered(yes: bool | None) -> None:
            if yes and self.current is entry:
                self.query_one("#entry-steps", TickList).untick_all()
                self._ticked[entry.id] = 0
                self._mark(entry)
                self._clear(ticks, entry.id)

        steps = "step" if done == 1 else "steps"
        self.app.push_screen(
            ConfirmDialog(f"Untick the {done} ticked {steps} of {entry.title}?", "Yes, untick"), answered
        )

    @work(thread=True, exit_on_error=False, group="ticks-save", description="clear checklist ticks")
    def _clear(self, ticks: ChecklistTicks, entry_id: str) -> None:
        self.engine.clear_ticks(ticks, entry_id)

    # Navigation -------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`a` is not offered while the search box has focus: there it types an a."""
        return not (action == "show_all" and isinstance(self.focused, Input))

    def action_focus_search(self) -> None:
        """Put the cursor in the search field."""
        self.query_one("#checklist-query", Input).focus()

    def action_show_all(self) -> None:
        """List every entry (leaving the plan's selection)."""
        self.only = None
        self.query_one("#checklist-query", Input).value = ""
        self._list(list(self.knowledge.checklist))

    def action_close(self) -> None:
        """Back to where the checklist was opened from."""
        self.dismiss()
