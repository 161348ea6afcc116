"""Regenerates screenshots/*.svg by driving the terminal UI with Pilot on the shipped knowledge, and the
browser ones (screenshots/serve-*.png) by driving `gpu-advisor serve` in headless Chromium."""

# Run by `make screenshots`. Prior efficiency keeps the numbers stable between runs, and the user data
# directory is a temporary one, so the shots never show the developer's own checklist ticks.

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "screenshots"
SIZE = (120, 36)
SIZES = {"results-80x24": (80, 24)}  # the smallest terminal the UI is laid out for

sys.path.insert(0, str(ROOT))  # run from a checkout without installing
sys.path.insert(0, str(ROOT / "tests"))  # the Pilot steps the UI tests use

from pilot_flows import choose_preset, settle  # noqa: E402

from tui.app import GpuAdvisorApp  # noqa: E402


async def preset(pilot: Pilot, preset_id: str) -> None:
    """Pick a preset on the first step, as a user would with the keyboard."""
    await choose_preset(pilot, preset_id)


async def results(pilot: Pilot, preset_id: str) -> None:
    """A preset, Next, Find plans."""
    await preset(pilot, preset_id)
    await pilot.press("ctrl+n")
    await settle(pilot)
    await pilot.press("ctrl+n")
    await settle(pilot)


async def wizard_start(pilot: Pilot) -> None:
    await settle(pilot)


async def wizard_model(pilot: Pilot) -> None:
    await preset(pilot, "lora-70b")


async def wizard_budget(pilot: Pilot) -> None:
    await preset(pilot, "inspection")
    await pilot.press("ctrl+n")
    await settle(pilot)


async def results_memory(pilot: Pilot) -> None:
    await results(pilot, "lora-70b")


async def results_chart(pilot: Pilot) -> None:
    await results(pilot, "pretrain-175b")
    pilot.app.screen.query_one("#plan-tabs").active = "tab-front"  # type: ignore[attr-defined]
    await settle(pilot)


async def results_operations(pilot: Pilot) -> None:
    await results(pilot, "lora-70b")
    pilot.app.screen.query_one("#plan-tabs").active = "tab-ops"  # type: ignore[attr-defined]
    await settle(pilot)


async def results_operations_second(pilot: Pilot) -> None:
    """The operations tab follows the highlighted row: plan #2 here."""
    await results_operations(pilot)
    pilot.app.screen.query_one("#plans").focus()
    await pilot.press("down")
    await settle(pilot)


async def wizard_advanced(pilot: Pilot) -> None:
    """The model step's Advanced section open, with a stated layout (tp 8, pp 7, ZeRO-1, selective)."""
    await preset(pilot, "pretrain-175b")
    wizard = pilot.app.screen
    wizard.query_one("#advanced").collapsed = False  # type: ignore[attr-defined]
    wizard.apply_values({"tp": "8", "pp": "7", "zero": "1", "recompute": "selective"})  # type: ignore[attr-defined]
    await settle(pilot)
    wizard.query_one("#tp").focus()
    wizard.query_one("#tp").scroll_visible(top=True, animate=False)
    await settle(pilot)


async def results_rules(pilot: Pilot) -> None:
    """The Rules & advice tab: the plan's configuration marked given or chosen, and what was assumed."""
    await results(pilot, "lora-70b")
    pilot.app.screen.query_one("#plan-tabs").active = "tab-advice"  # type: ignore[attr-defined]
    await settle(pilot)


async def checklist(pilot: Pilot) -> None:
    await results(pilot, "lora-70b")
    await pilot.press("c")
    await settle(pilot)


async def export(pilot: Pilot) -> None:
    await results(pilot, "chat-8b")
    await pilot.press("e")
    await settle(pilot)


SHOTS: dict[str, Callable[[Pilot], Awaitable[None]]] = {
    "wizard": wizard_start,
    "wizard-model": wizard_model,
    "wizard-budget": wizard_budget,
    "wizard-advanced": wizard_advanced,
    "results": results_memory,
    "results-chart": results_chart,
    "results-operations": results_operations_second,
    "results-rules": results_rules,
    "results-80x24": results_memory,
    "checklist": checklist,
    "export": export,
}


async def shoot(name: str, drive: Callable[[Pilot], Awaitable[None]], data_dir: Path) -> Path:
    """Run a fresh app, drive it, save its screen as screenshots/<name>.svg."""
    app = GpuAdvisorApp(efficiency="prior", user_data_dir=data_dir)
    async with app.run_test(size=SIZES.get(name, SIZE)) as pilot:
        await drive(pilot)
        app.save_screenshot(filename=f"{name}.svg", path=str(OUT))
    return OUT / f"{name}.svg"


def serve_shots() -> list[Path]:
    """screenshots/serve-wizard.png and serve-results.png: the UI as `gpu-advisor serve` shows it."""
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        print("serve-*.png skipped: needs playwright and Debian's chromium (apt-get install -y chromium)")
        return []
    from serve_client import open_in_browser, rank_in_browser, served

    shots = [OUT / "serve-wizard.png", OUT / "serve-results.png"]
    with (
        tempfile.TemporaryDirectory(prefix="gpu-advisor-serve-shots-") as tmp,
        served(Path(tmp)) as server,
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            screen = open_in_browser(page, server)
            page.screenshot(path=str(shots[0]))
            rank_in_browser(page, screen)
            page.wait_for_timeout(1000)  # the plan's details fill in after the table
            page.screenshot(path=str(shots[1]))
        finally:
            browser.close()
    return shots


def main(argv: list[str] | None = None) -> int:
    """Write every screenshot and list them (--no-serve: the SVGs only; --serve-only: the PNGs only)."""
    args = set(sys.argv[1:] if argv is None else argv)
    OUT.mkdir(exist_ok=True)
    if "--serve-only" not in args:
        Input._toggle_cursor = lambda self: None  # type: ignore[method-assign]  # no blink: stable SVGs
        with tempfile.TemporaryDirectory(prefix="gpu-advisor-shots-") as tmp:
            for name, drive in SHOTS.items():
                print(asyncio.run(shoot(name, drive, Path(tmp))).relative_to(ROOT))
    if "--no-serve" not in args:
        for shot in serve_shots():
            print(shot.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
