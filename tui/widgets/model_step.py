"""Provides ModelStep: the wizard's second step: the model (searched as you type), precision, data, load."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from advisor.question.fields import serving_load
from tui.formatting import human
from tui.widgets.advanced import AdvancedSection
from tui.widgets.field import FieldRow, field_row

if TYPE_CHECKING:
    from advisor.catalog import Knowledge
    from advisor.catalog.models import ModelSpec

MAX_MATCHES = 8


def matches(models: tuple[ModelSpec, ...], text: str) -> list[ModelSpec]:
    """Catalogue models whose id, name or an alias contains every typed word (all of them for no text)."""
    words = text.lower().split()
    found = []
    for m in models:
        hay = " ".join([m.id, m.name, *m.aliases]).lower()
        if all(w in hay for w in words):
            found.append(m)
    return found


class ModelStep(VerticalScroll):
    """Step 2: which model, at what precision, on how much data or under what load."""

    HELP = (
        "Type to search the catalogue; Enter takes the first suggestion, Down walks the list "
        "(Enter or a click picks one). Or give a custom size "
        "(e.g. 13B). Sizes accept k, M, B, T suffixes: 200k, 100M, 2T."
    )

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._models: tuple[ModelSpec, ...] = ()

    def compose(self) -> ComposeResult:
        """Model search, then the fields the chosen workload uses."""
        yield Static("Which model?", classes="step-heading")
        yield field_row("model")
        yield OptionList(id="model-matches")
        for name in ("params", "precision", "seq_len"):
            yield field_row(name)
        yield Static("How much work?", classes="step-heading")
        for name in ("tokens", "samples", "epochs", *serving_load()):
            yield field_row(name)
        yield AdvancedSection()

    def on_mount(self) -> None:
        """Search the catalogue once the app has loaded it."""
        self.watch(self.app, "knowledge", self._knowledge_changed)

    def _knowledge_changed(self, knowledge: Knowledge | None) -> None:
        self._models = knowledge.models if knowledge is not None else ()
        self._refresh_matches()

    def describe_model(self, spec: ModelSpec | None) -> None:
        """Show the resolved model under its name, and what the data is counted in."""
        row = self.query_one("#row-model", FieldRow)
        row.hint = (
            f"{spec.name}: {human(spec.params)} parameters, {spec.kind}" if spec else "a catalogue model"
        )
        samples = self.query_one("#row-samples", FieldRow)
        samples.hint = f"{spec.item}s per epoch" if spec is not None and spec.item else "per epoch"

    @on(Input.Changed, "#model")
    def _model_typed(self) -> None:
        self._refresh_matches()

    def _refresh_matches(self) -> None:
        text = self.query_one("#model", Input).value.strip()
        found = matches(self._models, text)
        exact = any(m.id == text.lower() for m in found)
        option_list = self.query_one("#model-matches", OptionList)
        option_list.clear_options()
        option_list.add_options(
            Option(
                Content.assemble((m.id, "bold"), f"  {m.name} ", (f"({human(m.params)}, {m.kind})", "dim")),
                id=m.id,
            )
            for m in found[:MAX_MATCHES]
        )
        option_list.display = bool(found) and not exact and bool(self._models)

    def on_key(self, event: events.Key) -> None:
        """Down from the model field goes into its suggestions; Up from the first suggestion comes back."""
        matches_list = self.query_one("#model-matches", OptionList)
        focused = self.screen.focused
        if event.key == "down" and focused is self.query_one("#model", Input) and matches_list.display:
            event.stop()
            matches_list.focus()
            matches_list.highlighted = 0
        elif event.key == "up" and focused is matches_list and matches_list.highlighted in (None, 0):
            event.stop()
            self.query_one("#model", Input).focus()

    @on(Input.Submitted, "#model")
    def _model_submitted(self, event: Input.Submitted) -> None:
        """Enter in the model field takes the first suggestion when the text is not a model yet."""
        matches_list = self.query_one("#model-matches", OptionList)
        if matches_list.display and matches_list.option_count:
            event.stop()
            self._choose(matches_list.get_option_at_index(matches_list.highlighted or 0).id or "")

    @on(OptionList.OptionSelected, "#model-matches")
    def _match_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option.id or "")

    def _choose(self, model_id: str) -> None:
        """Fill the model field with a suggestion; the cursor moves on to the next field."""
        model_input = self.query_one("#model", Input)
        model_input.value = model_id
        model_input.focus()
        self.call_after_refresh(self.screen.focus_next)
