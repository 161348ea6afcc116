"""Pilot tests of the wizard's Advanced section and of every results tab (each with a real report)."""

from __future__ import annotations

from pilot_flows import changed, choose_preset, open_results, settle
from textual.widgets import Collapsible, Input, TabbedContent

from tui.app import GpuAdvisorApp
from tui.screens.results import ResultsScreen
from tui.screens.wizard import WizardScreen
from tui.widgets.plan_views import AdvicePanel, CostPanel, MemoryPanel, WhyNotPanel
from tui.widgets.segmented import Segmented


def _message(wizard: WizardScreen, field: str) -> str:
    return str(wizard.rows()[field].query_one(".field-message").render())


async def _type(pilot, wizard: WizardScreen, field: str, text: str) -> None:
    control = wizard.rows()[field].control
    assert isinstance(control, Input)
    control.focus()
    control.value = ""
    await pilot.press(*text)
    await changed(pilot)


async def test_advanced_values_are_checked_and_reach_the_plan_as_given(make_app) -> None:
    app: GpuAdvisorApp = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        wizard = await choose_preset(pilot, "lora-70b")
        assert wizard.step == 1
        advanced = wizard.query_one("#advanced", Collapsible)
        assert advanced.collapsed  # out of the way until asked for
        advanced.collapsed = False
        await settle(pilot)
        await _type(pilot, wizard, "tp", "3")
        assert "does not divide" in _message(wizard, "tp") and "attention heads" in _message(wizard, "tp")
        assert wizard.check_action("next", ()) is None
        await _type(pilot, wizard, "tp", "8")
        await _type(pilot, wizard, "lora_rank", "32")
        optimizer = wizard.rows()["optimizer"].control
        assert isinstance(optimizer, Segmented)
        optimizer.value = "adamw-8bit"
        await changed(pilot)
        assert not wizard.checked.errors if wizard.checked else False
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        results = app.screen
        assert isinstance(results, ResultsScreen) and results.report is not None
        plan = results.report.plans[0]
        assert plan.layout.tp == 8 and plan.configuration["tp"].source == "given"
        assert (
            plan.configuration["lora_rank"].value == 32 and plan.configuration["lora_rank"].source == "given"
        )
        assert plan.configuration["optimizer"].value == "adamw-8bit"
        assert plan.configuration["optimizer"].source == "given"
        assert plan.configuration["pp"].source == "chosen"
        results.query_one("#plan-tabs", TabbedContent).active = "tab-advice"
        await settle(pilot)
        text = str(results.query_one(AdvicePanel).render())
        assert "Configuration" in text and "Tensor parallel" in text and "given" in text and "chosen" in text


async def test_advanced_shows_only_what_applies(make_app) -> None:
    app: GpuAdvisorApp = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        wizard = await choose_preset(pilot, "chat-8b")
        rows = wizard.rows()
        assert rows["engine"].display and rows["tp"].display and rows["headroom"].display
        assert not any(rows[f].display for f in ("stack", "zero", "optimizer", "lora_rank", "batch_size"))
        wizard.apply_values({"kind": "pretrain", "tokens": "1B"})
        await settle(pilot)
        rows = wizard.rows()
        assert rows["stack"].display and rows["zero"].display and not rows["engine"].display
        assert not rows["lora_rank"].display and not rows["lora_targets"].display
        wizard.apply_values({"model": "resnet50", "kind": "pretrain", "samples": "10k"})
        await settle(pilot)
        assert not wizard.rows()["tp"].display and wizard.rows()["dp"].display  # a CNN is data parallel only


async def test_a_clash_in_the_core_lands_beside_its_field(make_app) -> None:
    app: GpuAdvisorApp = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        wizard = await choose_preset(pilot, "pretrain-175b")
        wizard.apply_values({"zero": "2", "offload": "params"})
        await settle(pilot)
        assert "needs ZeRO 3" in _message(wizard, "offload")
        assert "--" not in _message(wizard, "offload")  # the UI's words, not the command line's
        wizard.apply_values({"zero": "3", "headroom": "95%"})
        await settle(pilot)
        assert not wizard.rows()["offload"].has_class("-invalid")
        assert "less than 0.9" in _message(wizard, "headroom")


async def test_every_results_tab_renders(make_app) -> None:
    from tui.widgets.front_chart import FrontChart
    from tui.widgets.ops_view import OperationsPanel

    app: GpuAdvisorApp = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        results = await open_results(pilot, "lora-70b")
        assert results.report is not None and results.report.plans
        expect = {
            "tab-memory": (MemoryPanel, "per GPU of"),
            "tab-cost": (CostPanel, "$"),
            "tab-advice": (AdvicePanel, "Assumed"),
            "tab-whynot": (WhyNotPanel, ""),
            "tab-front": (FrontChart, ""),
            "tab-ops": (OperationsPanel, ""),
        }
        tabs = results.query_one("#plan-tabs", TabbedContent)
        for tab, (kind, words) in expect.items():
            tabs.active = tab
            await settle(pilot)
            panel = results.query_one(kind)
            assert panel.region.height > 0, tab  # laid out and shown
            text = str(panel.render())
            assert text.strip() and words in text, (tab, text[:200])
        advice = str(results.query_one(AdvicePanel).render())
        assert "set Sequence length" in advice and "pass --" not in advice
