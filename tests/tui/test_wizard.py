"""Pilot tests of the wizard: first paint, validation beside each field, Next blocked, Back keeps, presets."""

from __future__ import annotations

import threading
from pathlib import Path

from pilot_flows import changed, choose_preset, settle
from textual.widgets import Button, Input, Static

from advisor.catalog import Knowledge
from tui.app import GpuAdvisorApp
from tui.presets import PRESETS
from tui.screens.results import ResultsScreen
from tui.screens.wizard import WizardScreen
from tui.widgets.choice_list import ChoiceList
from tui.widgets.field import FieldRow


def message(screen: WizardScreen, field: str) -> str:
    """The text beside a field."""
    row = screen.rows()[field]
    return str(row.query_one(".field-message", Static).render())


async def test_wizard_paints_before_the_knowledge_loads(fixture_knowledge: Knowledge, tmp_path: Path) -> None:
    release = threading.Event()

    def slow_load() -> Knowledge:
        release.wait(10)
        return fixture_knowledge

    app = GpuAdvisorApp(load_knowledge=slow_load, efficiency="prior", user_data_dir=tmp_path)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, WizardScreen)
        assert app.knowledge is None
        assert "Loading" in str(app.screen.query_one("#wizard-status", Static).render())
        release.set()
        await settle(pilot)
        assert app.knowledge is fixture_knowledge


async def test_invalid_input_shows_the_message_and_blocks_next(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)
        assert wizard.check_action("next", ()) is None  # no workload chosen yet
        wizard.query_one("#kind", ChoiceList).focus()
        await pilot.press("down", "down", "enter")  # LoRA
        await pilot.pause()
        assert wizard.values()["kind"] == "lora"
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert wizard.step == 1
        wizard.query_one("#model", Input).value = "llama-900"
        await pilot.press("0")  # the last key typed
        await changed(pilot)
        assert "unknown model" in message(wizard, "model")
        assert wizard.rows()["model"].has_class("-invalid")
        assert wizard.check_action("next", ()) is None
        assert wizard.query_one("#next", Button).disabled
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert wizard.step == 1  # Next did nothing
        wizard.query_one("#model", Input).value = "llama-2-70b"
        wizard.query_one("#tokens", Input).value = "lots"
        await changed(pilot)
        assert "not a number" in message(wizard, "tokens")
        assert wizard.check_action("next", ()) is None
        wizard.query_one("#tokens", Input).value = "100M"
        await changed(pilot)
        assert wizard.check_action("next", ()) is True
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert wizard.step == 2
        wizard.query_one("#budget-usd", Input).value = "20x"
        await changed(pilot)
        assert "not a number" in message(wizard, "budget_usd")
        assert wizard.check_action("next", ()) is None
        wizard.query_one("#budget-usd", Input).value = "20k"
        await changed(pilot)
        assert wizard.checked is not None and wizard.checked.constraints is not None
        assert wizard.checked.constraints.budget_usd == 20_000


async def test_pydantic_error_shows_beside_its_field(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "inspection")
        wizard.query_one("#precision").value = "int8"  # int8 is for inference only
        await changed(pilot)
        assert "for inference" in message(wizard, "precision")
        assert wizard.check_action("next", ()) is None


async def test_back_keeps_values(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "lora-70b")
        assert wizard.step == 1
        wizard.query_one("#tokens", Input).value = "250M"
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert wizard.step == 2
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert wizard.step == 0
        await pilot.press("ctrl+n", "ctrl+n")
        await pilot.pause()
        assert wizard.values()["tokens"] == "250M"
        assert wizard.values()["budget_usd"] == "20000"
        assert wizard.query_one("#tokens", Input).value == "250M"


async def test_fields_follow_the_workload_and_model(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        wizard = await choose_preset(pilot, "chat-8b")
        rows = wizard.rows()
        assert rows["requests_per_s"].display and not rows["tokens"].display
        wizard.rows()["kind"].set_value("pretrain")
        wizard.query_one("#model", Input).value = "resnet50"
        await settle(pilot)
        rows = wizard.rows()
        assert rows["samples"].display and not rows["tokens"].display and not rows["seq_len"].display
        assert not rows["requests_per_s"].display
        assert "images per epoch" in message(wizard, "samples")


async def test_each_preset_reaches_a_recommendation(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        for p in PRESETS:
            await choose_preset(pilot, p.id)
            await pilot.press("ctrl+n", "ctrl+n")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, ResultsScreen), p.id
            assert screen.report is not None and screen.report.plans, (p.id, screen.report)
            assert screen.report.workload.model == p.values["model"]
            await pilot.press("ctrl+r")  # restart the wizard for the next preset: everything cleared
            await settle(pilot)
            wizard = app.screen
            assert isinstance(wizard, WizardScreen) and wizard.step == 0
            assert all(row.value == row.default for row in wizard.query(FieldRow))


async def test_mouse_alone_reaches_the_results(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)
        await pilot.click("#presets", offset=(4, 1))  # the first preset's title line
        await settle(pilot)
        assert wizard.values()["model"] == "resnet50"
        assert wizard.step == 1
        await pilot.click("#next")
        await pilot.pause()
        assert wizard.step == 2
        await pilot.click("#next")
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        assert app.screen.report is not None and app.screen.report.plans


def test_combinations_the_core_refuses_block_the_step(fixture_knowledge) -> None:
    from tui.form import check

    refused = check(
        {"kind": "lora", "model": "resnet50", "samples": "200k", "epochs": "3"}, fixture_knowledge
    )
    assert refused.workload is None and "needs a transformer" in refused.errors["kind"]
    assert "--" not in refused.errors["kind"]  # no CLI flags in the UI's words
    fine = check(
        {"kind": "pretrain", "model": "resnet50", "samples": "200k", "epochs": "3"}, fixture_knowledge
    )
    assert fine.workload is not None and not fine.errors
