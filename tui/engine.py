"""Provides Engine: the TUI's only door to the advisor core, lazy and safe to call from worker threads."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from advisor.answer.report import PlanOut, Report
    from advisor.catalog import Knowledge
    from advisor.catalog.userdata import ChecklistTicks
    from advisor.job.inputs import Constraints, Workload
    from advisor.learned.efficiency.base import EfficiencyModel
    from advisor.ops.launch import LaunchArtefacts
    from advisor.ops.plan import OpsPlan
    from advisor.ops.tco import TcoOut

EfficiencyChoice = Literal["learned", "prior"]


@dataclass(frozen=True)
class PlanOps:
    """One plan's operations plan, launch artefacts and (on-prem) ownership cost."""

    plan: PlanOut
    operations: OpsPlan | None
    launch: LaunchArtefacts | None
    tco: TcoOut | None


class Engine:
    """Loads the knowledge and the efficiency model once, then answers the screens' questions.

    Every method may block (file reads, model load, the plan search), so screens call them from
    thread workers only. The imports of the core are deferred so the first frame paints before them.
    """

    def __init__(
        self,
        load_knowledge: Callable[[], Knowledge] | None = None,
        efficiency: EfficiencyChoice = "learned",
        user_data_dir: Path | None = None,
    ) -> None:
        self._load_knowledge = load_knowledge
        self._efficiency_choice = efficiency
        self._user_data_dir = user_data_dir
        self._lock = threading.Lock()
        self._knowledge: Knowledge | None = None
        self._efficiency: EfficiencyModel | None = None
        self._ticks: ChecklistTicks | None = None
        # Ticks are saved from worker threads; one lock keeps two quick ticks from writing over each other.
        self._ticks_lock = threading.Lock()

    def knowledge(self) -> Knowledge:
        """The knowledge base (loaded on first use)."""
        with self._lock:
            if self._knowledge is None:
                if self._load_knowledge is None:
                    from advisor.catalog import load_knowledge

                    self._load_knowledge = load_knowledge
                self._knowledge = self._load_knowledge()
            return self._knowledge

    def efficiency_model(self) -> EfficiencyModel:
        """The efficiency model recommend() uses (the learned one is slow to load: first use only)."""
        knowledge = self.knowledge()
        with self._lock:
            if self._efficiency is None:
                from advisor.learned.efficiency.select import efficiency_model

                self._efficiency = efficiency_model(knowledge, prior=self._efficiency_choice == "prior")
            return self._efficiency

    def recommend(self, workload: Workload, constraints: Constraints) -> Report:
        """The ranked answer; raises advisor.question.errors.InputError for combinations the core refuses."""
        from advisor.answer.recommend import recommend

        return recommend(self.knowledge(), workload, constraints, self.efficiency_model())

    def export_toml(self, report: Report) -> str:
        """The same TOML as `gpu-advisor recommend --format toml`."""
        from advisor.answer.export import export_toml

        return export_toml(report, self.knowledge())

    def write_export(self, report: Report, path: Path) -> Path:
        """Write the report's TOML atomically: a failed write leaves any old file as it was."""
        from advisor.catalog.userdata import write_text_atomic

        write_text_atomic(path, self.export_toml(report))
        return path

    def ticks(self) -> ChecklistTicks:
        """The checklist ticks kept in the user's data directory (or the directory given to the app)."""
        from advisor.catalog.userdata import ChecklistTicks

        with self._ticks_lock:
            if self._ticks is None:
                path = self._user_data_dir / "checklist-ticks.json" if self._user_data_dir else None
                self._ticks = ChecklistTicks(path)
            return self._ticks

    def set_tick(self, ticks: ChecklistTicks, entry_id: str, step: int, done: bool) -> None:
        """Tick or untick one step and save."""
        with self._ticks_lock:
            ticks.set(entry_id, step, done)

    def clear_ticks(self, ticks: ChecklistTicks, entry_id: str | None = None) -> None:
        """Untick one entry's steps, or all, and save."""
        with self._ticks_lock:
            ticks.clear(entry_id)

    def _settings_path(self) -> Path:
        from advisor.catalog.userdata import data_dir

        return (self._user_data_dir or data_dir()) / "ui-settings.json"

    def saved_theme(self) -> str | None:
        """The theme the user chose last time (None when none was saved; a bad file is moved aside)."""
        from advisor.catalog.userdata import read_stored

        settings = read_stored(self._settings_path(), _parse_settings)
        return settings.get("theme") if settings else None

    def save_theme(self, name: str) -> None:
        """Keep the chosen theme for the next start (under the data directory's lock, written atomically)."""
        from advisor.catalog.userdata import locked, read_stored, write_text_atomic

        path = self._settings_path()
        with locked(path.name, path.parent):
            settings = read_stored(path, _parse_settings) or {}
            settings["theme"] = name
            write_text_atomic(path, json.dumps(settings, indent=1, sort_keys=True))

    def plan_operations(self, report: Report, plan: PlanOut) -> PlanOps:
        """How to run one plan of the report: the report's own for plan #1, else worked out for this one."""
        if report.plans and plan.rank == report.plans[0].rank:
            return PlanOps(plan, report.operations, report.launch, report.tco)
        from advisor.job.resolve import resolve_job
        from advisor.ops.launch import launch_artefacts
        from advisor.ops.plan import operations_plan

        knowledge = self.knowledge()
        job = resolve_job(knowledge, report.workload)
        constraints = report.constraints
        tco_out = None
        if constraints.deployment == "on-prem":
            from advisor.ops.tco import TcoInputs, tco

            tco_out = tco(knowledge, TcoInputs(gpu=plan.gpu, count=plan.count), constraints)
        return PlanOps(
            plan,
            operations_plan(knowledge, job, constraints, plan.facts()),
            launch_artefacts(knowledge, job, constraints, plan.facts()),
            tco_out,
        )

    def entries_for_plan(self, report: Report, plan: PlanOut) -> list[str]:
        """Ids of the checklist entries worth reading before running this plan, most likely first."""
        from advisor.answer.checklist import entries_for_plan

        return [entry.id for entry, _ in entries_for_plan(self.knowledge(), report, plan)]


def _parse_settings(text: str) -> dict[str, str]:
    """The UI settings file: a JSON object of setting -> text (anything else is not ours to read)."""
    raw = json.loads(text)
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ValueError("expected a JSON object of setting name -> text")
    return raw
