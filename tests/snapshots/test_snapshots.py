"""Snapshot tests: one SVG per screen at a fixed size, on the fixture knowledge with prior efficiency."""

from __future__ import annotations

from pilot_flows import scroll_settled, until
from snapshot_flows import invalid_model_step, pick_preset, results, settle
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Collapsible


def test_wizard_workload_step_80x24(snap_compare, snapshot_app) -> None:
    assert snap_compare(snapshot_app(), terminal_size=(80, 24), run_before=settle)


def test_wizard_model_step_with_an_error(snap_compare, snapshot_app) -> None:
    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=invalid_model_step)


def test_wizard_budget_step(snap_compare, snapshot_app) -> None:
    async def budget_step(pilot: Pilot) -> None:
        await pick_preset(pilot, "lora-70b")
        await pilot.press("ctrl+n")
        await settle(pilot)

    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=budget_step)


def test_results_memory(snap_compare, snapshot_app) -> None:
    async def memory(pilot: Pilot) -> None:
        await results(pilot, "lora-70b")

    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=memory)


def test_results_chart_80x24(snap_compare, snapshot_app) -> None:
    async def chart(pilot: Pilot) -> None:
        await results(pilot, "inspection", tab="tab-front")

    assert snap_compare(snapshot_app(), terminal_size=(80, 24), run_before=chart)


def test_checklist_for_a_plan(snap_compare, snapshot_app) -> None:
    async def plan_checklist(pilot: Pilot) -> None:
        await results(pilot, "lora-70b")
        await pilot.press("c")
        await settle(pilot)

    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=plan_checklist)


def test_export_dialog(snap_compare, snapshot_app) -> None:
    async def export(pilot: Pilot) -> None:
        await results(pilot, "chat-8b")
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=export)


def test_help(snap_compare, snapshot_app) -> None:
    async def help_screen(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)

    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=help_screen)


def test_results_memory_80x24(snap_compare, snapshot_app) -> None:
    """The cost column, the footer and the memory legend all on screen at 80x24."""

    async def memory(pilot: Pilot) -> None:
        await results(pilot, "lora-70b")

    assert snap_compare(snapshot_app(), terminal_size=(80, 24), run_before=memory)


def test_results_operations_of_the_second_plan(snap_compare, snapshot_app) -> None:
    """The operations tab follows the highlighted row (plan #2 here)."""

    async def operations(pilot: Pilot) -> None:
        screen = await results(pilot, "lora-70b", tab="tab-ops")
        screen.query_one("#plans").focus()
        await pilot.press("down")
        await settle(pilot)

    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=operations)


def test_wizard_advanced_section_open(snap_compare, snapshot_app) -> None:
    """The Advanced section expanded, one stated value refused beside its field (tp 3 on 64 heads)."""

    async def advanced(pilot: Pilot) -> None:
        wizard = await pick_preset(pilot, "lora-70b")
        step = wizard.query_one("#step-1", VerticalScroll)
        before = step.scroll_target_y
        wizard.query_one("#advanced", Collapsible).collapsed = False
        wizard.apply_values({"tp": "3", "zero": "3", "optimizer": "adamw-8bit"})
        # Opening the section scrolls the step to it, animated, a refresh or two later (Textual's
        # Collapsible). The scroll to tp below, worked out while that one runs, starts from a fraction of a
        # row, and the scrollbar's thumb shows the fraction: the flake under load, where a pause is shorter
        # than the animation. So wait for that scroll to have run and ended.
        await until(
            pilot,
            lambda: step.scroll_target_y != before and scroll_settled(pilot, step),
            "the step scrolled to the opened section",
        )
        tp = wizard.query_one("#tp")
        tp.focus(scroll_visible=False)  # focusing would start a scroll of its own, animated
        tp.scroll_visible(top=True, animate=False, immediate=True)
        aimed = step.scroll_y
        await settle(pilot)
        assert step.scroll_y == aimed and scroll_settled(pilot, step), "the step scrolled again after tp's"

    assert snap_compare(snapshot_app(), terminal_size=(100, 32), run_before=advanced)


def test_results_step_tab(snap_compare, snapshot_app) -> None:
    """The Step tab: the chosen plan's P50 step by operation class, each with its basis and source."""

    async def step(pilot: Pilot) -> None:
        await results(pilot, "lora-70b", tab="tab-step")

    assert snap_compare(snapshot_app(), terminal_size=(120, 40), run_before=step)


def test_results_rules_tab_with_configuration(snap_compare, snapshot_app) -> None:
    """The Rules & advice tab: why the plan, its configuration marked given or chosen, what was assumed."""

    async def rules(pilot: Pilot) -> None:
        await results(pilot, "lora-70b", tab="tab-advice")

    assert snap_compare(snapshot_app(), terminal_size=(100, 40), run_before=rules)
