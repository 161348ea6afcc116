"""Provides the records a rule's condition tree is validated as when rules.toml is read (a cache miss): a
test of one fact, and all/any of several. The tree is then kept as plain data (rules.compile_node runs it),
so a command that only evaluates rules declares none of these types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from advisor.catalog.common import NON_EMPTY
from advisor.catalog.rule_vocab import FIELDS, ORDERED_OPS, Op


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Condition:
    """One test of a fact against a value, typed by FIELDS."""

    field: str
    op: Op
    value: Any

    def __post_init__(self) -> None:
        if self.field not in FIELDS:
            raise ValueError(f"unknown field {self.field!r}; known: {', '.join(sorted(FIELDS))}")
        kind = FIELDS[self.field]
        if self.op in ("in", "not_in") and not isinstance(self.value, list | tuple | frozenset):
            raise ValueError(f"op {self.op!r} needs a list value")
        values = self.value if self.op in ("in", "not_in") else [self.value]
        if self.op in ORDERED_OPS and kind in (str, bool):
            raise ValueError(f"op {self.op!r} does not apply to {kind.__name__} field {self.field!r}")
        for v in values:
            ok = (
                isinstance(v, int | float) and not isinstance(v, bool)
                if kind in (int, float)
                else isinstance(v, kind)
            )
            if not ok:
                raise ValueError(f"value {v!r} is not a {kind.__name__} for field {self.field!r}")


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class AllOf:
    """True when every child is true."""

    all: Annotated[tuple[Node, ...], NON_EMPTY]


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class AnyOf:
    """True when at least one child is true."""

    any: Annotated[tuple[Node, ...], NON_EMPTY]


for _record in (Condition, AllOf, AnyOf):
    # Unknown keys refused, as records.adapter does for the records a type annotation reaches (these are
    # reached through the hook below instead).
    _record.__pydantic_config__ = {"extra": "forbid"}  # type: ignore[union-attr]


def _node_kind(value: Any) -> str:
    """Which node a tree element is."""
    if isinstance(value, dict):
        return "all" if "all" in value else "any" if "any" in value else "condition"
    return "all" if isinstance(value, AllOf) else "any" if isinstance(value, AnyOf) else "condition"


class _NodeChoice:
    """Validates a tree element as the one node its keys name, so that a bad condition reports its own error,
    not three union ones."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Discriminator, Tag

        tagged = (
            Annotated[Condition, Tag("condition")]
            | Annotated[AllOf, Tag("all")]
            | Annotated[AnyOf, Tag("any")]
        )
        return handler.generate_schema(Annotated[tagged, Discriminator(_node_kind)])


Node = Annotated[Condition | AllOf | AnyOf, _NodeChoice()]


def plain(node: Condition | AllOf | AnyOf) -> dict[str, Any]:
    """A validated tree as the plain data a Rule keeps: {"field", "op", "value"}, {"all": [...]} or
    {"any": [...]}."""
    if isinstance(node, Condition):
        return {"field": node.field, "op": node.op, "value": node.value}
    if isinstance(node, AllOf):
        return {"all": [plain(child) for child in node.all]}
    return {"any": [plain(child) for child in node.any]}


def tree_schema(handler: Any) -> Any:
    """pydantic's schema of a rule's `when`: validated as the records above, kept as plain data."""
    from pydantic_core import core_schema

    return core_schema.no_info_after_validator_function(plain, handler.generate_schema(Node))
