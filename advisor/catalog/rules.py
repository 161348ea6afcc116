"""Provides the rules engine: rules.toml's schema, its closed vocabulary, and a pure evaluation function."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from advisor.catalog.common import EntryId
from advisor.catalog.rule_vocab import FIELDS

_PLACEHOLDER = re.compile(r"\{([a-z_]+\.[a-z_0-9]+)\}")


def scope_of(field: str) -> str:
    """'job', 'gpu' or 'plan': when a fact becomes known."""
    head = field.split(".", 1)[0]
    return {"workload": "job", "constraints": "job", "gpu": "gpu", "plan": "plan"}[head]


class _Tree:
    """Validates a rule's condition tree as rule_nodes' records (pydantic, only when a rules file is read) and
    keeps it as plain data: evaluating a rule needs no record type for its tree."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from advisor.catalog.rule_nodes import tree_schema

        return tree_schema(handler)


Node = Annotated[dict[str, Any], _Tree()]
"""A condition tree as plain data: {"field": ..., "op": ..., "value": ...}, {"all": [node, ...]} or
{"any": [node, ...]} (advisor/catalog/rule_nodes.py holds its schema)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Rule:
    """A declarative rule: when its condition holds it excludes, scores or advises."""

    id: EntryId
    kind: Literal["constraint", "preference", "advice"]
    when: Node = field(hash=False)
    """The condition: plain data, hashed by its rule's other fields."""
    explanation: str
    source: str
    message: str
    """Shown when the rule fires; may name facts as {gpu.id}."""
    score: float = 0.0
    """Preferences only: added to the plan's score (positive = preferred)."""
    compiled: Callable[[dict[str, Any]], bool] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """The condition as closures, made with the rule (rules run per candidate plan); not in the file."""

    def __post_init__(self) -> None:
        for name in _PLACEHOLDER.findall(self.message):
            if name not in FIELDS:
                raise ValueError(f"message names unknown field {{{name}}}")
        if (self.kind == "preference") != (self.score != 0.0):
            raise ValueError("a preference needs a non-zero score, and only a preference has one")
        object.__setattr__(self, "compiled", compile_node(self.when))

    def test(self, facts: dict[str, Any]) -> bool:
        """Whether the condition holds."""
        return self.compiled(facts)  # type: ignore[misc]  # set by __post_init__

    @property
    def fields(self) -> list[str]:
        """Every fact the condition tests."""
        return _fields(self.when)

    @property
    def scope(self) -> str:
        """The latest scope among the facts the rule tests."""
        order = {"job": 0, "gpu": 1, "plan": 2}
        return max((scope_of(f) for f in _fields(self.when)), key=order.__getitem__)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class RuleBook:
    """All of rules.toml."""

    schema_version: Literal[1]
    sources: dict[str, Any]
    rule: tuple[Rule, ...]

    def __post_init__(self) -> None:
        ids = [r.id for r in self.rule]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate rule ids: {', '.join(sorted(dupes))}")


@dataclass(frozen=True, slots=True, repr=False)
class Firing:
    """A rule that fired, with its message rendered from the facts."""

    rule_id: str
    kind: str
    message: str
    explanation: str
    source: str
    score: float


def _fields(node: Node) -> list[str]:
    if "field" in node:
        return [node["field"]]
    children = node["all"] if "all" in node else node["any"]
    return [f for child in children for f in _fields(child)]


def render(message: str, facts: dict[str, Any]) -> str:
    """Fill {field} placeholders from the facts."""
    return _PLACEHOLDER.sub(lambda m: _show(facts.get(m.group(1), "?")), message)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "in": lambda fact, value: fact in value,
    "not_in": lambda fact, value: fact not in value,
}
_MISSING = object()


def compile_node(node: Node) -> Callable[[dict[str, Any]], bool]:
    """The condition tree as closures: true when every `all` child / some `any` child holds (a missing fact
    makes its test false)."""
    if "field" in node:
        field, op, value = node["field"], node["op"], node["value"]
        fn = _OPS[op]
        if op in ("in", "not_in"):
            value = frozenset(value)

        def test(facts: dict[str, Any]) -> bool:
            fact = facts.get(field, _MISSING)
            return fact is not _MISSING and fn(fact, value)

        return test
    every = "all" in node
    children = tuple(compile_node(c) for c in (node["all"] if every else node["any"]))
    # Loops rather than all()/any() over a generator: the same short-circuit, without a generator per test.
    if every:

        def test_all(facts: dict[str, Any]) -> bool:
            for child in children:  # noqa: SIM110  (no generator per test)
                if not child(facts):
                    return False
            return True

        return test_all

    def test_any(facts: dict[str, Any]) -> bool:
        for child in children:  # noqa: SIM110  (no generator per test)
            if child(facts):
                return True
        return False

    return test_any


def evaluate(rules: tuple[Rule, ...] | list[Rule], facts: dict[str, Any]) -> list[Firing]:
    """Return the rules that fire for these facts, in file order. Pure: the result depends on the facts
    alone."""
    return [
        Firing(r.id, r.kind, render(r.message, facts), r.explanation, r.source, r.score)
        for r in rules
        if r.test(facts)
    ]
