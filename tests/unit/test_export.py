"""Unit tests of the TOML export: a golden file, and a round trip through `recommend --from`."""

from __future__ import annotations

import datetime as dt
import os
import tomllib
from pathlib import Path

from advisor.answer.export import export_record, export_toml
from advisor.answer.recommend import recommend
from advisor.job.door import question
from advisor.job.inputs import Constraints, Workload
from advisor.learned.efficiency import PriorEfficiency

GOLDEN = Path(__file__).parent / "golden" / "recommend_llama2_7b_finetune.toml"
WHEN = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def _report(knowledge):
    return recommend(
        knowledge,
        Workload(model="llama-2-7b", kind="finetune", tokens=2e8),
        Constraints(budget_usd=2000, deadline_hours=24, gpus=("a100-80gb-sxm", "l40s", "h100-sxm"), top=3),
        PriorEfficiency(knowledge.assumptions),
    )


def test_golden_toml(knowledge) -> None:
    text = export_toml(_report(knowledge), knowledge, WHEN)
    if (
        os.environ.get("GPU_ADVISOR_UPDATE_GOLDEN") == "1"
    ):  # a deliberate refresh; review the diff, then commit
        GOLDEN.write_text(text)
    assert GOLDEN.exists(), (
        f"{GOLDEN.name} is missing: run with GPU_ADVISOR_UPDATE_GOLDEN=1 once and review it"
    )
    assert text == GOLDEN.read_text(), (
        "export changed: review the diff, then refresh the golden file with GPU_ADVISOR_UPDATE_GOLDEN=1"
    )


def test_record_is_self_describing(knowledge) -> None:
    data = tomllib.loads(export_toml(_report(knowledge), knowledge, WHEN))
    assert data["schema_version"] == 1 and data["tool"]["name"] == "gpu-advisor"
    assert data["generated_at"] == WHEN
    assert data["inputs"]["workload"]["model"] == "llama-2-7b"
    assert data["inputs"]["constraints"]["budget_usd"] == 2000
    a = data["assumptions"]
    assert a["prices_as_of"] and a["price_sources"] and a["catalogue_version"] and a["efficiency_source"]
    chosen = data["chosen"]
    assert {
        "gpu",
        "count",
        "nodes",
        "parallelism",
        "precision",
        "memory_per_gpu_gb",
        "hours",
        "cost_usd",
        "reasons",
    } <= set(chosen)
    assert chosen["hours"]["p10"] <= chosen["hours"]["p50"] <= chosen["hours"]["p90"]
    assert len(data["alternatives"]) == 2
    assert data["rules_fired"] and isinstance(data["advice"], list)


def test_round_trip_reproduces_the_plans(knowledge) -> None:
    report = _report(knowledge)
    data = tomllib.loads(export_toml(report, knowledge, WHEN))
    again = recommend(
        knowledge,
        question(Workload, data["inputs"]["workload"]),
        question(Constraints, data["inputs"]["constraints"]),
        PriorEfficiency(knowledge.assumptions),
    )
    assert again.plans == report.plans
    assert export_record(again, knowledge, WHEN) == export_record(report, knowledge, WHEN)
