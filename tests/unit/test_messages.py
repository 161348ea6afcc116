"""The core's answers are said without any front end's words: no field of any Report (plans, why-nots,
suggestions, notes, assumptions, operations, TCO) names a command-line flag; each front end names inputs."""

from __future__ import annotations

import json

import pytest
from cli_flags import FLAG

from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, Workload

CASES = {
    "70b finetune, stale prices": (
        {"model": "llama-2-70b", "kind": "finetune", "tokens": 1e8},
        {"budget_usd": 20000},
    ),
    "nothing fits": ({"model": "llama-3.1-405b", "kind": "pretrain"}, {"budget_usd": 100, "max_gpus": 8}),
    "memory bound": ({"model": "llama-2-70b", "kind": "finetune"}, {"gpus": ("l4",), "max_gpus": 8}),
    "serving": ({"model": "llama-3.1-8b", "kind": "inference", "requests_per_s": 20}, {"pricing": "spot"}),
    "on-prem cnn": ({"model": "resnet50", "samples": 2e5, "epochs": 3}, {"deployment": "on-prem"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_report_field_names_a_flag(knowledge, case: str) -> None:
    workload, constraints = CASES[case]
    report = recommend(knowledge, Workload(**workload), Constraints(**constraints))
    data = report.plain()
    for key, value in data.items():
        text = json.dumps(value)
        assert not FLAG.search(text), (key, FLAG.search(text), text[:400])
    if case == "nothing fits":
        assert report.suggestions and all(s.field and s.outcome for s in report.suggestions)
