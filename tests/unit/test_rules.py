"""Unit tests of the rules engine: vocabulary checks at load, pure evaluation, message rendering."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from advisor.catalog.rules import FIELDS, Rule, RuleBook, compile_node, evaluate
from advisor.question.records import dump, validate


def rule(**over: object) -> Rule:
    base = {
        "id": "r",
        "kind": "constraint",
        "explanation": "e",
        "source": "s",
        "message": "{gpu.id} no",
        "when": {"field": "gpu.bf16", "op": "eq", "value": False},
    }
    return validate(Rule, {**base, **over})


def test_unknown_field_fails_at_load() -> None:
    with pytest.raises(ValidationError, match=r"unknown field 'gpu\.colour'"):
        rule(when={"field": "gpu.colour", "op": "eq", "value": "red"})


def test_unknown_operator_fails_at_load() -> None:
    with pytest.raises(ValidationError):
        rule(when={"field": "gpu.memory_gb", "op": "approx", "value": 80.0})


def test_value_type_is_checked_against_the_field() -> None:
    with pytest.raises(ValidationError, match="not a float"):
        rule(when={"field": "gpu.memory_gb", "op": "lt", "value": "eighty"})
    with pytest.raises(ValidationError, match="does not apply"):
        rule(when={"field": "gpu.id", "op": "lt", "value": "h100"})


def test_unknown_placeholder_fails() -> None:
    with pytest.raises(ValidationError, match="unknown field"):
        rule(message="{gpu.nickname} is slow")


def test_preference_needs_score_and_only_it_has_one() -> None:
    with pytest.raises(ValidationError):
        rule(kind="preference")
    with pytest.raises(ValidationError):
        rule(kind="advice", score=0.5)


def test_all_any_trees_and_missing_facts() -> None:
    tree = rule(
        when={
            "all": [
                {"field": "plan.tp", "op": "gt", "value": 1},
                {
                    "any": [
                        {"field": "gpu.nvlink_domain", "op": "eq", "value": 1},
                        {"field": "gpu.interconnect", "op": "in", "value": ["pcie"]},
                    ]
                },
            ]
        }
    )
    holds = compile_node(tree.when)
    assert holds({"plan.tp": 2, "gpu.nvlink_domain": 1, "gpu.interconnect": "nvswitch"})
    assert holds({"plan.tp": 2, "gpu.nvlink_domain": 8, "gpu.interconnect": "pcie"})
    assert not holds({"plan.tp": 1, "gpu.nvlink_domain": 1, "gpu.interconnect": "pcie"})
    assert not holds({"gpu.nvlink_domain": 1})  # a missing fact makes its test false


def test_evaluate_is_pure_and_renders_messages() -> None:
    r = rule()
    facts = {"gpu.bf16": False, "gpu.id": "v100-16gb"}
    first = evaluate([r], facts)
    assert [f.message for f in first] == ["v100-16gb no"]
    assert evaluate([r], facts) == first
    assert facts == {"gpu.bf16": False, "gpu.id": "v100-16gb"}
    assert evaluate([r], {"gpu.bf16": True, "gpu.id": "h100-sxm"}) == []


def test_scope_is_the_latest_fact_tested() -> None:
    assert rule().scope == "gpu"
    assert rule(when={"field": "plan.count", "op": "lt", "value": 4}).scope == "plan"
    assert rule(when={"field": "workload.params_b", "op": "ge", "value": 100.0}).scope == "job"


def test_duplicate_ids_rejected() -> None:
    r = dump(rule())
    with pytest.raises(ValidationError, match="duplicate"):
        validate(RuleBook, {"schema_version": 1, "sources": {}, "rule": [r, r]})


def test_shipped_rules_use_the_vocabulary(knowledge) -> None:
    kinds = {r.kind for r in knowledge.rules.rule}
    assert kinds == {"constraint", "preference", "advice"}
    for r in knowledge.rules.rule:
        assert knowledge.source(r.source) is not None, r.id
    assert "plan.tp_outside_nvlink" in FIELDS


def test_shipped_bf16_rule_excludes_volta(knowledge) -> None:
    fired = evaluate(
        knowledge.rules.rule,
        {"plan.precision": "bf16", "gpu.bf16": False, "gpu.id": "v100-16gb", "gpu.compute_capability": 7.0},
    )
    assert [f.rule_id for f in fired if f.kind == "constraint"] == ["bf16-needs-hardware"]
