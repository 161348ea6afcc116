"""Pilot tests of the wizard's fixes: no stale value on a fast Ctrl+N, presets start clean, keys, words."""

from __future__ import annotations

from pilot_flows import changed, choose_preset, settle
from textual.widgets import Input, OptionList, Static

from advisor.catalog import Knowledge
from tui.form import check
from tui.screens.results import ResultsScreen
from tui.screens.wizard import WizardScreen


def message(screen: WizardScreen, field: str) -> str:
    """The text beside a field."""
    return str(screen.rows()[field].query_one(".field-message", Static).render())


async def test_fast_ctrl_n_plans_on_the_value_on_screen(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "lora-70b")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert wizard.step == 2
        budget = wizard.query_one("#budget-usd", Input)
        budget.focus()
        # Typed and Ctrl+N at once: the change has not reached the form through its message yet.
        budget.value = "7777"
        wizard.action_next()
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        assert app.screen.constraints.budget_usd == 7777
        await pilot.press("escape")
        await settle(pilot)
        assert wizard.query_one("#budget-usd", Input).value == "7777"  # going back keeps what was typed


async def test_a_preset_starts_from_a_clean_form(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "chat-8b")
        await pilot.press("ctrl+n")
        await settle(pilot)
        for _ in range(2):
            await pilot.press("escape")
            await settle(pilot)
        await choose_preset(pilot, "inspection")
        await pilot.press("ctrl+n")
        await settle(pilot)
        values = wizard.values()
        assert values["budget_period"] == "job" and values["requests_per_s"] == ""
        assert wizard.rows()["budget_period"].value == "job"
        await choose_preset_again(pilot, wizard, "lora-70b")
        values = wizard.values()
        assert values["epochs"] == "" and values["deadline_hours"] == "" and values["samples"] == ""
        assert wizard.rows()["deadline_hours"].value == ""


async def choose_preset_again(pilot, wizard: WizardScreen, preset_id: str) -> None:
    wizard.step = 0
    await settle(pilot)
    await choose_preset(pilot, preset_id)


async def test_model_suggestions_down_and_enter(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "lora-70b")
        model = wizard.query_one("#model", Input)
        model.focus()
        model.value = "llama"
        await changed(pilot)
        await pilot.press("down")
        suggestions = wizard.query_one("#model-matches", OptionList)
        assert app.focused is suggestions and suggestions.highlighted == 0
        await pilot.press("up")
        assert app.focused is model
        await pilot.press("enter")  # the first suggestion
        await changed(pilot)
        first = suggestions.get_option_at_index(0).id if suggestions.option_count else None
        assert model.value and model.value == (first or model.value)
        assert "unknown" not in message(wizard, "model")


async def test_q_quits_but_types_in_a_field(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "lora-70b")
        model = wizard.query_one("#model", Input)
        model.focus()
        await pilot.press("end", "q")
        assert model.value.endswith("q") and app.is_running
        wizard.query_one("#precision").focus()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


def test_absurd_and_ambiguous_values_are_refused_in_the_ui_words(fixture_knowledge: Knowledge) -> None:
    base = {"kind": "lora", "model": "llama-2-70b"}
    cases = {
        "tokens": ("1e30", "must be at most 1e+16"),
        "deadline_hours": ("30m", "30min for minutes or 30mo for months"),
        "budget_usd": ("lots", "not a number"),
    }
    for name, (text, words) in cases.items():
        checked = check({**base, name: text}, fixture_knowledge)
        assert words in checked.errors[name], checked.errors
        assert "--" not in checked.errors[name]
    samples = check({"kind": "pretrain", "model": "resnet50", "samples": "0.5"}, fixture_knowledge)
    assert "whole number" in samples.errors["samples"]
    minutes = check({**base, "deadline_hours": "90min"}, fixture_knowledge)
    assert minutes.constraints is not None and minutes.constraints.deadline_hours == 1.5


def test_no_flag_names_in_any_wizard_message(fixture_knowledge: Knowledge) -> None:
    bad = [
        {"kind": "lora", "model": "resnet50", "samples": "200k"},
        {"kind": "pretrain", "model": "resnet50"},
        {"kind": "finetune", "model": "llama-2-7b", "precision": "int8"},
        {"kind": "inference", "model": "llama-2-7b", "prompt_tokens": "9000", "output_tokens": "9000"},
        {"kind": "lora", "model": "llama-2-7b", "params": "7B"},
        {"kind": "lora", "seq_len": "0.5"},
    ]
    for values in bad:
        checked = check(values, fixture_knowledge)
        assert checked.errors, values
        assert not any("--" in m for m in checked.errors.values()), checked.errors


async def test_changing_the_kind_drops_the_other_kinds_values(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "chat-8b")
        assert wizard.values()["budget_period"] == "month"
        wizard.step = 0
        await settle(pilot)
        wizard.query_one("#kind").value = "pretrain"  # type: ignore[attr-defined]
        await settle(pilot)
        values = wizard.values()
        assert values["budget_period"] == "job" and values["requests_per_s"] == "" and values["tpot_ms"] == ""
        await choose_preset(pilot, "inspection")
        wizard.step = 0
        await settle(pilot)
        wizard.query_one("#kind").value = "inference"  # type: ignore[attr-defined]
        await settle(pilot)
        values = wizard.values()
        assert values["epochs"] == "" and values["deadline_hours"] == "" and values["samples"] == ""


async def test_tiny_and_huge_terminals_render(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        for size in ((40, 12), (20, 6), (250, 80)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            app.screen._compositor.render_update(full=True)  # a full paint, as a terminal gets
        assert app.is_running
