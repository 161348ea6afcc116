"""Pilot tests of the results: budget recompute, export round trip, overwrite and failure, palette."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pilot_flows import open_results, settle
from textual.widgets import Input, Static

from tui.app import GpuAdvisorApp
from tui.screens.checklist import ChecklistScreen
from tui.screens.confirm import ConfirmDialog
from tui.screens.export import ExportDialog
from tui.screens.results import ResultsScreen
from tui.screens.wizard import WizardScreen
from tui.widgets.plan_table import PlanTable


async def export_to(pilot, path: Path) -> None:
    """Open the export dialog with `e`, type the path, press Enter."""
    await pilot.press("e")
    await pilot.pause()
    dialog = pilot.app.screen
    assert isinstance(dialog, ExportDialog)
    dialog.query_one("#export-path", Input).value = str(path)
    await pilot.pause()
    await pilot.press("enter")
    await settle(pilot)


async def test_budget_change_recomputes_and_reaches_the_wizard(make_app) -> None:
    app: GpuAdvisorApp = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Restart the wizard" in titles and "Open the troubleshooting checklist" in titles
        assert "Switch light/dark theme" in titles and "Export plans as TOML" not in titles
        dark = app.current_theme.dark
        await pilot.press("f3")
        assert app.current_theme.dark is not dark
        results = await open_results(pilot, "lora-70b")
        assert "Export plans as TOML" in [c.title for c in app.get_system_commands(app.screen)]
        first = results.report
        assert first is not None and first.constraints.budget_usd == 20_000 and first.plans
        await pilot.press("b")  # focus the budget field
        budget = results.query_one("#budget-usd", Input)
        assert budget.has_focus
        budget.value = "abc"
        await pilot.pause()
        assert "not a number" in str(results.query_one("#row-budget-usd .field-message", Static).render())
        budget.value = "150"
        await pilot.press("enter")
        await settle(pilot)
        second = results.report
        assert second is not None and second is not first
        assert second.constraints.budget_usd == 150
        assert all(p.cost_usd.high <= 150 for p in second.plans)
        assert second.nothing_fits or len(second.plans) <= len(first.plans)
        await pilot.press("escape")  # back to the wizard: it shows the new budget
        await settle(pilot)
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)
        assert wizard.values()["budget_usd"] == "150"


async def test_export_parses_back_to_the_same_plan(make_app, tmp_path: Path) -> None:
    app = make_app()
    target = tmp_path / "out" / "plan.toml"
    async with app.run_test(size=(100, 32)) as pilot:
        results = await open_results(pilot, "inspection")
        report = results.report
        assert report is not None
        await pilot.press("e")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert dialog.query_one("#export-path", Input).value == "gpu-plan-resnet50.toml"
        await pilot.press("escape")
        await pilot.pause()
        await export_to(pilot, target)
        assert isinstance(app.screen, ConfirmDialog)  # the folder "out" is missing: asked before it is made
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        data = tomllib.loads(target.read_text(encoding="utf-8"))
        assert data["chosen"]["gpu"] == report.plans[0].gpu
        assert data["chosen"]["count"] == report.plans[0].count
        assert data["inputs"]["workload"]["model"] == "resnet50"
        assert data["inputs"]["constraints"]["deadline_hours"] == 72

        # Overwrite: asked first; No keeps the old file and reopens the dialog with the same path.
        before = target.read_text(encoding="utf-8")
        await export_to(pilot, target)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, ExportDialog)
        assert app.screen.query_one("#export-path", Input).value == str(target)
        await pilot.press("escape")
        await pilot.pause()
        assert target.read_text(encoding="utf-8") == before
        # Yes replaces it.
        target.write_text("old", encoding="utf-8")
        await export_to(pilot, target)
        await pilot.press("y")
        await settle(pilot)
        assert tomllib.loads(target.read_text(encoding="utf-8"))["chosen"]["gpu"] == report.plans[0].gpu

        # A failed write: the dialog opens again with the same path and the reason; nothing is touched.
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("a file where a folder should be", encoding="utf-8")
        await export_to(pilot, blocker / "plan.toml")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert dialog.query_one("#export-path", Input).value == str(blocker / "plan.toml")
        assert "Could not write" in str(dialog.query_one("#export-message", Static).render())
        assert blocker.read_text(encoding="utf-8") == "a file where a folder should be"


async def test_inference_results_and_plan_checklist(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        results = await open_results(pilot, "chat-8b")
        table = results.query_one(PlanTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert "TTFT / token" in labels and "cost / month" in labels
        assert not results.query_one("#row-deadline-hours").display  # no deadline for a service
        plan = table.selected
        assert plan is not None and plan.serving is not None
        await pilot.press("c")
        await settle(pilot)
        checklist = app.screen
        assert isinstance(checklist, ChecklistScreen)
        assert checklist.entries[0].id == "oom"
        header = str(checklist.query_one("#entry-header", Static).render())
        assert plan.memory.dominant in header and "This plan" in header


async def test_results_fit_small_and_large_terminals(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        results = await open_results(pilot, "lora-70b")
        for size in ((80, 24), (160, 50)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            table = results.query_one(PlanTable)
            assert table.region.height >= 3 and table.region.right <= size[0]
            tabs = results.query_one("#plan-tabs")
            assert tabs.region.height >= 6 and tabs.region.bottom <= size[1] - 1


async def test_operations_tab_shows_the_plan_tco_and_launch(make_app) -> None:
    from tui.widgets.ops_view import OperationsPanel

    app: GpuAdvisorApp = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        results = await open_results(pilot, "lora-70b", "tab-ops", deployment="on-prem")
        assert results.report is not None
        assert results.report.tco is not None and results.report.operations is not None
        text = str(results.query_one(OperationsPanel).render())
        assert "Owning it" in text and "per used GPU-hour" in text
        assert "Elastic scaling" in text and "checkpoint interval" in text and "torchrun" in text


async def test_export_refuses_a_json_name_for_its_toml(make_app, tmp_path: Path) -> None:
    """The export is TOML: a name ending .json (which --from would read as JSON and refuse) says so beside
    the field and Save stays off; nothing is written."""
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await open_results(pilot, "inspection")
        await pilot.press("e")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one("#export-path", Input).value = str(tmp_path / "plan.json")
        await pilot.pause()
        message = str(dialog.query_one("#export-message", Static).render())
        assert "TOML" in message and ".toml" in message, message
        assert dialog.query_one("#save").disabled
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ExportDialog) and not list(tmp_path.iterdir())
