"""The wizard on the field registry: 'auto' in Advanced, a "most GPUs" field, the core's checks beside their
fields, and no command-line flag anywhere on the results screen."""

from __future__ import annotations

from cli_flags import FLAG
from pilot_flows import changed, choose_preset, open_results, settle
from textual.widgets import Input, TabbedContent

from advisor.catalog import Knowledge
from tui.form import check
from tui.screens.results import ResultsScreen


def test_auto_and_blank_leave_advanced_values_to_the_search(fixture_knowledge: Knowledge) -> None:
    base = {"kind": "lora", "model": "llama-2-70b", "tokens": "100M"}
    checked = check({**base, "tp": "auto", "global_batch": "AUTO", "shard_group": ""}, fixture_knowledge)
    assert not checked.errors and checked.workload is not None
    assert checked.workload.config.tp is None and checked.workload.config.global_batch is None
    refused = check({**base, "tp": "x"}, fixture_knowledge).errors["tp"]
    assert "whole number" in refused and "at most 1024" in refused and "13B" not in refused


def test_most_gpus_is_asked_and_reaches_the_constraints(fixture_knowledge: Knowledge) -> None:
    checked = check(
        {"kind": "qlora", "model": "llama-2-70b", "tokens": "100M", "max_gpus": "1"}, fixture_knowledge
    )
    assert checked.constraints is not None and checked.constraints.max_gpus == 1
    assert "max_gpus" in checked.applicable
    refused = check({"kind": "qlora", "model": "llama-2-70b", "max_gpus": "0"}, fixture_knowledge).errors
    assert refused["max_gpus"].startswith("'0' must be at least 1")


def test_the_cores_checks_land_beside_their_fields(fixture_knowledge: Knowledge) -> None:
    cases = [
        ({"kind": "lora", "model": "llama-3.1-8b", "params": "7B"}, "params", "given with another model"),
        ({"kind": "lora"}, "model", "is missing"),
        ({"kind": "finetune", "model": "llama-3.1-8b", "precision": "int8"}, "precision", "is for inference"),
        ({"kind": "lora", "model": "resnet50", "samples": "200k"}, "kind", "needs a transformer"),
        ({"kind": "pretrain", "model": "resnet50"}, "samples", "images per epoch"),
        (
            {"kind": "inference", "model": "llama-3.1-8b", "prompt_tokens": "140000"},
            "output_tokens",
            "context",
        ),
        ({"kind": "lora", "model": "llama3-70b"}, "model", "did you mean"),
    ]
    for values, field, words in cases:
        errors = check(values, fixture_knowledge).errors
        assert words in errors.get(field, ""), (values, errors)
        assert not any(FLAG.search(m) for m in errors.values()), errors


async def test_most_gpus_row_on_the_budget_step(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        wizard = await choose_preset(pilot, "lora-70b")
        await pilot.press("ctrl+n")
        await settle(pilot)
        row = wizard.rows()["max_gpus"]
        assert row.display and "Most GPUs" in str(row.query_one(".field-label").render())
        control = row.control
        assert isinstance(control, Input)
        control.value = "1"
        await changed(pilot)
        wizard.action_next()
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen) and app.screen.constraints.max_gpus == 1
        assert app.screen.report is not None and all(p.count == 1 for p in app.screen.report.plans)


def _screen_text(results: ResultsScreen) -> str:
    from tui.widgets.front_chart import FrontChart
    from tui.widgets.ops_view import OperationsPanel
    from tui.widgets.plan_views import AdvicePanel, CostPanel, MemoryPanel, WhyNotPanel

    parts = []
    for kind in (MemoryPanel, CostPanel, AdvicePanel, WhyNotPanel, FrontChart, OperationsPanel):
        for panel in results.query(kind):
            parts.append(str(panel.render()))
    parts += [str(w.render()) for w in results.query("Static")]
    return "\n".join(parts)


async def test_no_flag_names_anywhere_on_the_results_screen(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        for preset_id, changes in (
            ("lora-70b", {}),
            ("chat-8b", {}),
            ("lora-70b", {"budget_usd": "5", "max_gpus": "2"}),  # nothing fits: what would
            ("pretrain-175b", {"deployment": "on-prem"}),
        ):
            results = await open_results(pilot, preset_id, **changes)
            tabs = results.query_one("#plan-tabs", TabbedContent)
            for tab in ("tab-memory", "tab-cost", "tab-advice", "tab-whynot", "tab-front", "tab-ops"):
                tabs.active = tab
                await settle(pilot)
                text = _screen_text(results)
                assert not FLAG.search(text), (preset_id, tab, FLAG.search(text), text[:300])
                if tab == "tab-whynot" and results.report is not None and results.report.nothing_fits:
                    # Named by the wizard's labels: the budget that would let the cheapest plan in.
                    assert "What would" in text and "Budget (USD) " in text, text
            await pilot.press("escape")
            await settle(pilot)


def test_concurrency_is_asked_for_inference_and_reaches_the_workload(fixture_knowledge: Knowledge) -> None:
    """The registry's concurrency field is a wizard row for inference (hidden for training) and reaches
    the workload; with a request rate as well it is refused beside the field, in the wizard's words."""
    base = {"kind": "inference", "model": "llama-3.1-8b"}
    checked = check({**base, "concurrency": "64"}, fixture_knowledge)
    assert not checked.errors and checked.workload is not None and checked.workload.concurrency == 64
    assert "concurrency" in checked.applicable
    assert "concurrency" not in check({"kind": "lora", "model": "llama-3.1-8b"}, fixture_knowledge).applicable
    both = check({**base, "concurrency": "8", "requests_per_s": "2"}, fixture_knowledge).errors
    assert "request rate" in " ".join(both.values()) and not any(FLAG.search(m) for m in both.values())


def test_num_prompts_is_asked_for_inference_and_reaches_the_workload(fixture_knowledge: Knowledge) -> None:
    """The registry's prompt count (a burst sent at once) is a wizard row for inference, reaches the
    workload, and a bad count is refused beside the field in the wizard's words."""
    base = {"kind": "inference", "model": "llama-3.1-8b"}
    checked = check({**base, "num_prompts": "320"}, fixture_knowledge)
    assert not checked.errors and checked.workload is not None and checked.workload.num_prompts == 320
    assert "num_prompts" in checked.applicable
    assert "num_prompts" not in check({"kind": "lora", "model": "llama-3.1-8b"}, fixture_knowledge).applicable
    bad = check({**base, "num_prompts": "0"}, fixture_knowledge).errors
    assert "num_prompts" in bad and not any(FLAG.search(m) for m in bad.values())
