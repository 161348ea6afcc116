"""Provides GpuAdvisorApp, the guided terminal UI, and run_app(), what a bare `gpu-advisor` runs."""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import var
from textual.screen import Screen
from textual.theme import Theme

from tui.engine import EfficiencyChoice, Engine
from tui.messages import EfficiencyLoaded, KnowledgeLoaded, LoadFailed
from tui.screens.wizard import WizardScreen

if TYPE_CHECKING:
    from advisor.catalog import Knowledge
    from tui.screens.results import ResultsScreen

# The results, checklist and help screens (the chart, markdown and the core's report types behind them) are
# imported on first use, or by the load worker once the wizard is up: the first frame needs only the wizard.

DARK, LIGHT = "textual-dark", "textual-light"


class GpuAdvisorApp(App[int]):
    """Wizard, results, checklist and export over the advisor core; all slow work runs in thread workers."""

    CSS_PATH = "app.tcss"
    TITLE = "gpu-advisor"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = [
        Binding("f1", "help", "Help", tooltip="Keys and how to use each screen", id="app-help"),
        Binding(
            "f2",
            "checklist",
            "Checklist",
            tooltip="Troubleshooting checklist by error type",
            id="app-checklist",
        ),
        Binding("f3", "toggle_dark", "Light/dark", show=False, id="app-theme"),
        # Not in the footer: every screen's footer (and its snapshot) stays as it was; F1 and Ctrl+P list it.
        Binding(
            "f4",
            "fleet",
            "Fleet",
            show=False,
            tooltip="Plan a cluster for a portfolio of jobs",
            id="app-fleet",
        ),
        Binding("ctrl+r", "restart_wizard", "Restart", show=False, id="app-restart"),
        # q quits wherever it is not text being typed (an input keeps its q); Ctrl+Q works everywhere.
        Binding("q", "quit", "Quit", show=False, tooltip="Leave gpu-advisor", id="app-quit"),
    ]

    knowledge: var[Knowledge | None] = var(None)
    """The loaded knowledge base; None until the load worker reports it."""

    def __init__(
        self,
        load_knowledge: Callable[[], Knowledge] | None = None,
        efficiency: EfficiencyChoice = "learned",
        user_data_dir: Path | None = None,
        exit_on_hangup: bool = False,
        served_dir: Path | None = None,
    ) -> None:
        """Build the app.

        Args:
            load_knowledge: returns the knowledge base (default: the shipped one); runs in a worker.
            efficiency: "learned" (the benchmark-trained model when present) or "prior" (deterministic).
            user_data_dir: where checklist ticks are kept (default: the user's data directory).
            exit_on_hangup: leave on SIGHUP (the real terminal; tests run without one).
            served_dir: the session folder when `gpu-advisor serve` runs this app for a browser: exports are
                downloads written only there (tui/served.py).
        """
        super().__init__()
        self._exit_on_hangup = exit_on_hangup
        self.served_dir = served_dir
        self.engine = Engine(load_knowledge, efficiency, user_data_dir)
        self.efficiency_name = ""
        self._saved_theme = ""
        self._theme_lock = threading.Lock()

    def on_mount(self) -> None:
        """Paint the wizard first, then load the knowledge and the model in a thread."""
        if self._exit_on_hangup:
            from tui.hangup import HANGUP_STATUS, leave_with_the_terminal

            # A closed window, a killed tmux, a dropped SSH link: leave instead of waiting on the terminal.
            loop = asyncio.get_running_loop()
            leave_with_the_terminal(lambda: loop.call_soon_threadsafe(self.exit, None, HANGUP_STATUS))
        self._restore_theme()
        if self.served_dir is not None:
            from tui.served import leave_with_server

            leave_with_server(self)
        self.push_screen(WizardScreen())
        # After the wizard's first frame: the load's imports must not compete with painting it.
        self.call_after_refresh(self._load)

    def _restore_theme(self) -> None:
        """The theme chosen last time (a small file read: before the first frame, so it paints once)."""
        try:
            saved = self.engine.saved_theme()
        except OSError:
            saved = None
        if saved in self.available_themes and saved != self.theme:
            self.theme = saved
        self._saved_theme = saved or self.theme
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, theme: Theme) -> None:
        if theme.name != self._saved_theme:
            self._saved_theme = theme.name
            self._save_theme()

    @work(thread=True, exit_on_error=False, group="theme", description="save the theme")
    def _save_theme(self) -> None:
        try:
            with self._theme_lock:  # quick switches: whichever save runs last writes the latest choice
                self.engine.save_theme(self._saved_theme)
        except OSError as exc:
            self.call_from_thread(self.notify, f"Could not keep the theme: {exc}", severity="warning")

    @work(
        thread=True, exclusive=True, exit_on_error=False, group="load", description="load knowledge and model"
    )
    def _load(self) -> None:
        try:
            self.post_message(KnowledgeLoaded(self.engine.knowledge()))
            self.post_message(EfficiencyLoaded(self.engine.efficiency_model().name))
            _import_later_screens()
        except Exception as exc:  # noqa: BLE001 - any load failure is shown; the checklist stays usable
            self.post_message(LoadFailed(f"{type(exc).__name__}: {exc}"))

    @on(KnowledgeLoaded)
    def _knowledge_loaded(self, message: KnowledgeLoaded) -> None:
        self.knowledge = message.knowledge

    @on(EfficiencyLoaded)
    def _efficiency_loaded(self, message: EfficiencyLoaded) -> None:
        self.efficiency_name = message.name

    @on(LoadFailed)
    def _load_failed(self, message: LoadFailed) -> None:
        self.notify(message.error, title="Could not load the knowledge", severity="error", timeout=30)

    # Screens --------------------------------------------------------------------------------------

    @on(WizardScreen.Completed)
    def _wizard_completed(self, message: WizardScreen.Completed) -> None:
        from tui.screens.results import ResultsScreen

        # Find plans pressed again before (or after) the results showed: keys typed faster than a screen
        # mounts all reach the wizard. One results screen answers the latest question, one ranking at a time.
        shown = [s for s in self.screen_stack if isinstance(s, ResultsScreen)]
        if shown:
            shown[-1].ask(message.workload, message.constraints)
            return
        self.push_screen(ResultsScreen(self.engine, message.workload, message.constraints))

    # Named for ResultsScreen.ConstraintsAdjusted rather than @on(...), which would import the results screen.
    def on_results_screen_constraints_adjusted(self, message: ResultsScreen.ConstraintsAdjusted) -> None:
        """Budget or deadline changed on the results: the wizard shows them when the user goes back."""
        for screen in self.screen_stack:
            if isinstance(screen, WizardScreen):
                screen.apply_values(message.values)

    def action_help(self) -> None:
        """F1: the help screen."""
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_checklist(self, entry_ids: Iterable[str] = ()) -> None:
        """The troubleshooting checklist (once the knowledge is loaded)."""
        from tui.screens.checklist import ChecklistScreen

        if self.knowledge is None:
            self.notify("The knowledge base is still loading.", severity="warning")
            return
        if isinstance(self.screen, ChecklistScreen):
            return
        self.push_screen(ChecklistScreen(self.engine, self.knowledge))

    def action_fleet(self, path: str | None = None) -> None:
        """The fleet planner: a cluster for a whole portfolio (its own screen; sized in a worker)."""
        from tui.screens.fleet import FleetScreen

        if not isinstance(self.screen, FleetScreen):
            self.push_screen(FleetScreen(self.engine, path))

    def action_toggle_dark(self) -> None:
        """Switch between the light and the dark theme."""
        self.theme = LIGHT if self.current_theme.dark else DARK

    def action_restart_wizard(self) -> None:
        """Close every screen above the wizard and clear it back to its first step."""
        while len(self.screen_stack) > 2:
            self.pop_screen()
        wizard = self.screen_stack[-1]
        if isinstance(wizard, WizardScreen):
            wizard.restart()

    def action_export(self) -> None:
        """Export the plans on the results screen."""
        from tui.screens.results import ResultsScreen

        if isinstance(self.screen, ResultsScreen):
            self.screen.action_export()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The built-in commands plus export, restart, checklist and the light/dark switch."""
        from tui.screens.results import ResultsScreen

        yield from super().get_system_commands(screen)
        if isinstance(screen, ResultsScreen) and screen.report is not None:
            yield SystemCommand(
                "Export plans as TOML", "Write the recommendation to a TOML file", screen.action_export
            )
        yield SystemCommand(
            "Restart the wizard", "Start again from the first step", self.action_restart_wizard
        )
        yield SystemCommand(
            "Open the troubleshooting checklist",
            "Error types, symptoms and ordered steps",
            self.action_checklist,
        )
        yield SystemCommand(
            "Plan a fleet for a portfolio",
            "Size, simulate and price a cluster for a team's whole portfolio (TOML)",
            self.action_fleet,
        )
        yield SystemCommand(
            "Switch light/dark theme",
            "Toggle between textual-light and textual-dark",
            self.action_toggle_dark,
        )


def _import_later_screens() -> None:
    """Import the screens the wizard leads to, so the first visit to each does not stall on its imports."""
    for name in ("tui.screens.checklist", "tui.screens.help", "tui.screens.results"):
        importlib.import_module(name)


def run_app() -> int:
    """Run the UI until the user quits; the exit status."""
    from tui.served import session_dir

    # Served (a browser session): its ticks and exports stay in the session's own folder.
    folder = session_dir()
    app = GpuAdvisorApp(exit_on_hangup=folder is None, user_data_dir=folder, served_dir=folder)
    app.run()
    return app.return_code or 0
