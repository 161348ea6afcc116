"""Pilot tests of issue 20's UI items: whole table cells after a re-rank, one results screen, the wizard's
scroll, export's folder question, the checklist's keys and marks, the kept theme."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pilot_flows import choose_preset, open_results, settle
from textual import events
from textual.containers import VerticalScroll
from textual.widgets import Footer, Input, OptionList, Static

from tui.formatting import plan_cost
from tui.screens.checklist import ChecklistScreen
from tui.screens.confirm import ConfirmDialog
from tui.screens.export import ExportDialog
from tui.screens.results import ResultsScreen
from tui.screens.wizard import WizardScreen
from tui.widgets.plan_table import PlanTable
from tui.widgets.tick_list import TickList


async def until(pilot, condition: Callable[[], bool], tries: int = 50) -> None:
    """Settle until the condition holds (keys queued at once reach their screens over several rounds)."""
    for _ in range(tries):
        await settle(pilot)
        if condition():
            return
        await pilot.pause(0.1)
    raise AssertionError("the app never got there")


def table_lines(table: PlanTable) -> list[str]:
    """The table as the terminal shows it, one string per line."""
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_cells_are_whole_after_five_reranks(make_app, monkeypatch) -> None:
    """A frame painted between the new rows and the table's idle measurement must not freeze the columns at
    their headers' widths (`v100-16gb x16` shown as `v10  1`)."""
    shown = PlanTable.show

    def show_then_paint(table: PlanTable, report) -> None:
        shown(table, report)
        table_lines(table)  # the frame a busy screen paints before the table's idle handler runs

    monkeypatch.setattr(PlanTable, "show", show_then_paint)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_results(pilot, "lora-70b")
        table = screen.query_one(PlanTable)
        for budget in ("20", "150", "", "5000", "20000"):
            screen.query_one("#budget-usd", Input).value = budget
            screen.query_one("#budget-usd", Input).focus()
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, ResultsScreen) and screen.report is not None
            lines = table_lines(table)
            for i, plan in enumerate(screen.report.plans):
                row = lines[1 + i]  # under the header
                assert f" {plan.gpu} " in row and plan_cost(plan, False) in row, (budget, row)
                assert f" {plan.count} " in row and plan.parallelism in row, (budget, row)


async def test_quick_find_plans_open_one_results_screen(make_app) -> None:
    """25 quick Ctrl+N from the first step: one results screen, one Esc back to the wizard."""
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await choose_preset(pilot, "lora-70b")
        for _ in range(25):  # queued at once, as a terminal delivers keys typed faster than screens mount
            app.post_message(events.Key("ctrl+n", None))
        await until(pilot, lambda: getattr(app.screen, "report", None) is not None)
        stack = [type(s).__name__ for s in app.screen_stack]
        assert stack.count("ResultsScreen") == 1, stack
        results = app.screen
        assert isinstance(results, ResultsScreen) and results.report is not None
        assert results.report.plans
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, WizardScreen)


async def test_each_step_opens_at_its_top_with_its_first_field_focused(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        wizard = await choose_preset(pilot, "lora-70b")
        step = wizard.query_one("#step-1", VerticalScroll)
        for leave in (("ctrl+n", "escape"), ("ctrl+r",)):
            step.scroll_end(animate=False, immediate=True)
            await settle(pilot)
            assert step.scroll_y > 0
            for key in leave:
                await pilot.press(key)
                await settle(pilot)
            if leave == ("ctrl+r",):
                assert wizard.step == 0
                wizard = await choose_preset(pilot, "chat-8b")
            assert wizard.step == 1 and step.scroll_y == 0, leave
            focused = app.focused
            assert focused is not None and focused.id == "model", leave
            assert app.screen.region.contains_region(focused.region), leave


async def test_export_into_a_new_folder_with_enter_twice_saves(make_app, tmp_path: Path) -> None:
    """Enter, Enter: the folder typed is made and the file saved; a No or a Cancel says nothing was saved."""
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await open_results(pilot, "inspection")
        target = tmp_path / "new" / "plan.toml"
        for answer in ("n", "enter"):
            await pilot.press("e")
            await pilot.pause()
            app.screen.query_one("#export-path", Input).value = str(target)
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmDialog)
            await pilot.press(answer)
            await settle(pilot)
            if answer == "n":
                assert isinstance(app.screen, ExportDialog) and not target.parent.exists()
                assert "Nothing saved" in str(app.screen.query_one("#export-message", Static).render())
                await pilot.press("escape")
                await settle(pilot)
                assert "Nothing was saved" in [n.message for n in app._notifications][-1]
        assert isinstance(app.screen, ResultsScreen)
        assert target.exists()
        assert [n.title for n in app._notifications][-1] == "Exported"


async def test_checklist_keys_say_what_they_do_and_ticks_show_in_the_list(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ChecklistScreen)
        entries = screen.query_one("#checklist-entries", OptionList)
        first = screen.entries[0]
        # A tick marks its entry in the list.
        await pilot.press("enter")  # into the steps
        await pilot.press("space")
        await settle(pilot)
        assert f"✔ 1/{len(first.steps)}" in str(entries.get_option(first.id).prompt)
        # x asks first; No keeps the tick, Yes clears it and the mark.
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and "Untick the 1 ticked step" in app.screen.question
        await pilot.press("enter")  # the safe answer: No
        await settle(pilot)
        assert screen.query_one("#entry-steps", TickList).ticked == {0}
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert screen.query_one("#entry-steps", TickList).ticked == set()
        assert "✔" not in str(entries.get_option(first.id).prompt)
        # In the search box, a is typed: neither the footer nor the hint offers it there.
        await pilot.press("slash")
        for key in "zzqq":
            await pilot.press(key)
        await settle(pilot)
        header = str(screen.query_one("#entry-header", Static).render())
        assert "No entry matches" in header and "press a " not in header and "Tab" in header
        footer = [k.description for k in screen.query_one(Footer).query("FooterKey").results()]  # type: ignore[attr-defined]
        assert "All entries" not in footer and "Search" in footer, footer
        await pilot.press("a")
        assert screen.query_one("#checklist-query", Input).value == "zzqqa"
        await pilot.press("tab", "a")
        await settle(pilot)
        assert len(screen.entries) == len(app.knowledge.checklist)


async def test_the_theme_is_kept_across_restarts(make_app, tmp_path: Path) -> None:
    data = tmp_path / "kept"
    first = make_app(user_data_dir=data)
    async with first.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dark = first.current_theme.dark
        await pilot.press("f3")
        await settle(pilot)
        chosen = first.theme
        assert first.current_theme.dark is not dark
    again = make_app(user_data_dir=data)
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert again.theme == chosen
    # A file that is not ours is moved aside (kept), and the app starts on its default theme.
    settings = data / "ui-settings.json"
    settings.write_text("{not json", encoding="utf-8")
    third = make_app(user_data_dir=data)
    async with third.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert third.current_theme.dark is dark
    assert [p.read_text() for p in data.glob("ui-settings.json.corrupt-*")] == ["{not json"]
