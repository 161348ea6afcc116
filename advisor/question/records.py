"""Provides Record: a frozen dataclass declared once, with value constraints beside its fields, validated by
pydantic only when untrusted data is read, and dumped like pydantic's model_dump.

It sits in the lowest stage because every stage declares records with it: the question's assumptions, the
catalogue's knowledge, the answer's report."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from typing import Annotated, Any, ClassVar, TypeVar, cast, dataclass_transform

from advisor.question.values import make_value_type

R = TypeVar("R", bound="Record")
# Fields typed as a float: a whole number given there is dumped as a float, as a validating model holds it.
_FLOAT_ANNOTATION = re.compile(r"(float|PosFloat|NonNegFloat)( \| None)?")

# Knowledge types by class name: the cache codec finds them here.
RECORDS: dict[str, type[Record]] = {}


class Check:
    """A value constraint on a record field (gt, ge, min_length, pattern: pydantic-core's own keys).

    Records are plain dataclasses: building one from the cache imports nothing. When untrusted data is
    validated (a cache miss, a user's file), pydantic reads these markers through the hook below, so each
    constraint is declared once, beside the field, and an error names that field."""

    __slots__ = ("keys",)

    def __init__(self, **keys: Any) -> None:
        self.keys = keys

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        schema.update(self.keys)
        return schema


PosFloat = Annotated[float, Check(gt=0)]
PosInt = Annotated[int, Check(gt=0)]
NonNegFloat = Annotated[float, Check(ge=0)]
NonNegInt = Annotated[int, Check(ge=0)]
Title = Annotated[str, Check(min_length=3)]
CatalogueId = Annotated[str, Check(pattern=r"^[a-z0-9][a-z0-9.\-]*$")]
EntryId = Annotated[str, Check(pattern=r"^[a-z0-9][a-z0-9\-]*$")]
NON_EMPTY = Check(min_length=1)


# dataclass_transform tells type checkers what `record` makes, so constructor calls are checked field by
# field.
@dataclass_transform(
    frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field, dataclasses.Field)
)
def record(cls: type[R]) -> type[R]:
    """Make a Record subclass a frozen, slotted, keyword-only dataclass and register it by name.

    Validation (types, Literals, the Check markers, unknown keys refused, `__post_init__` checks) happens
    through `model_validate`, which pydantic runs on the dataclass itself; commands read the same objects from
    the cache without importing pydantic."""
    made = make_value_type(cls, frozen=True, slots=True, kw_only=True)
    fields = dataclasses.fields(cast(Any, made))  # a dataclass from the line above
    # What a record holds from its file: a field __post_init__ makes (init=False) is not dumped nor cached.
    made._FIELDS = tuple(f.name for f in fields if f.init)
    made._FLOATS = frozenset(f.name for f in fields if f.init and _FLOAT_ANNOTATION.fullmatch(str(f.type)))
    made.__pydantic_config__ = {"extra": "forbid"}  # type: ignore[attr-defined]
    if RECORDS.setdefault(made.__name__, made) is not made:
        # The cache codec finds a record type by its name alone.
        raise TypeError(f"two record types named {made.__name__}")
    return made


@functools.cache
def adapter(kind: Any) -> Any:
    """pydantic's validator for a record type or a container of them (built once per type)."""
    from pydantic import TypeAdapter

    return TypeAdapter(kind)


class Record:
    """Base of the knowledge types."""

    __slots__ = ()
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    _FLOATS: ClassVar[frozenset[str]] = frozenset()

    def model_dump(
        self, *, mode: str = "python", exclude_none: bool = False, exclude_defaults: bool = False
    ) -> dict[str, Any]:
        """The fields as a dict, as pydantic's model_dump gives them (mode="json": dates as ISO text,
        lists)."""
        out: dict[str, Any] = {}
        defaults = _defaults(type(self)) if exclude_defaults else {}
        for name in self._FIELDS:
            value = getattr(self, name)
            if exclude_none and value is None:
                continue
            if name in defaults and value == defaults[name]:
                continue
            if name in self._FLOATS and type(value) is int:
                value = float(value)
            out[name] = _dump(value, mode, exclude_none)
        return out

    @classmethod
    def model_validate(cls: type[R], data: Any) -> R:
        """Validate untrusted data into this type (raises pydantic's ValidationError, a ValueError)."""
        return cast(R, adapter(cast(Any, cls)).validate_python(data))


def _defaults(cls: type) -> dict[str, Any]:
    """Each field's default value, where it has one."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _dump(value: Any, mode: str, exclude_none: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(mode=mode, exclude_none=exclude_none)
    if hasattr(value, "model_dump"):  # the user's inputs (job.frozen) or a pydantic model, held by a record
        return value.model_dump(mode=mode, exclude_none=exclude_none)
    if isinstance(value, tuple | list):
        items = [_dump(v, mode, exclude_none) for v in value]
        return items if mode == "json" or isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _dump(v, mode, exclude_none) for k, v in value.items()}
    if mode == "json" and isinstance(value, dt.date):
        return value.isoformat()
    return value
