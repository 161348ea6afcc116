"""Provides what the core's records share beyond `@dataclass(frozen=True, slots=True)`: value constraints
declared beside a field, `validate` (data from outside into a record type, through pydantic, imported there
only) and `dump` (a record as plain data, as pydantic's model_dump gives it).

It sits in the lowest stage because every stage declares records: the question's assumptions, the catalogue's
knowledge, the answer's report."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
import typing
from typing import Annotated, Any, TypeVar, overload

R = TypeVar("R")
# Fields typed as a float: a whole number given there is dumped as a float, as validation would hold it.
_FLOAT_ANNOTATION = re.compile(r"(float|PosFloat|NonNegFloat|PositiveFloat)( \| None)?")


class Check:
    """A value constraint on a record field (gt, ge, min_length, pattern: pydantic-core's own keys).

    Records are plain dataclasses: building one imports nothing. When data from outside is validated (a
    knowledge file on a cache miss, a user's file), pydantic reads these markers through the hook below, so
    each constraint is declared once, beside the field, and an error names that field."""

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


@overload
def validate(kind: type[R], data: Any) -> R: ...
@overload
def validate(kind: Any, data: Any) -> Any: ...


def validate(kind: Any, data: Any) -> Any:
    """Data from outside as `kind` (a record type or a container of them, such as list[Gpu]): types, Literals,
    the Check markers, `__post_init__` checks, unknown keys refused. Raises pydantic's ValidationError (a
    ValueError), its errors in the words pydantic uses for any model."""
    from pydantic import ValidationError

    try:
        return adapter(kind).validate_python(data)
    except ValidationError as exc:
        errors = exc.errors()
        if not any(e["type"] in _AS_FOR_A_MODEL for e in errors):
            raise
        worded = [{**e, "type": _AS_FOR_A_MODEL.get(e["type"], e["type"])} for e in errors]
        raise ValidationError.from_exception_data(exc.title, worded) from None  # type: ignore[arg-type]


# A dataclass takes keyword arguments, a model fields: the same refusal, said as for a model.
_AS_FOR_A_MODEL = {
    "unexpected_keyword_argument": "extra_forbidden",
    "missing_keyword_only_argument": "missing",
    "missing_argument": "missing",
}


@functools.cache
def adapter(kind: Any) -> Any:
    """pydantic's validator for a record type or a container of them (built once per type)."""
    from pydantic import TypeAdapter

    for cls in _records_in(kind, set()):
        # pydantic reads a dataclass's configuration from this attribute: a key no field has is refused.
        if "__pydantic_config__" not in cls.__dict__:
            cls.__pydantic_config__ = {"extra": "forbid"}  # type: ignore[attr-defined]
    return TypeAdapter(kind)


def _records_in(kind: Any, seen: set[type]) -> list[type]:
    """Every dataclass a type annotation reaches (fields of fields included)."""
    found: list[type] = []
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if kind in seen:
            return found
        seen.add(kind)
        found.append(kind)
        for hint in typing.get_type_hints(kind, include_extras=True).values():
            found += _records_in(hint, seen)
        return found
    for arg in typing.get_args(kind):
        found += _records_in(arg, seen)
    return found


def fields_of(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields that make a record's value (what `dump` gives and the cache keeps): those given to its
    constructor and compared; a field `__post_init__` makes, or one that is not part of the value, is not."""
    return _layout(cls)[0]


@functools.cache
def _layout(cls: type) -> tuple[tuple[dataclasses.Field[Any], ...], frozenset[str], dict[str, Any]]:
    """A record type's dumped fields, those typed as a float, and each field's default."""
    fields = tuple(f for f in dataclasses.fields(cls) if f.init and f.compare)
    floats = frozenset(f.name for f in fields if _FLOAT_ANNOTATION.fullmatch(str(f.type)))
    defaults: dict[str, Any] = {}
    for f in fields:
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    return fields, floats, defaults


def dump(
    value: Any, *, mode: str = "python", exclude_none: bool = False, exclude_defaults: bool = False
) -> Any:
    """A record (or a container of them) as plain data, as pydantic's model_dump gives it: records as dicts of
    their fields, tuples kept (lists with mode="json", dates as ISO text there too)."""
    flags: dict[str, Any] = {"mode": mode, "exclude_none": exclude_none, "exclude_defaults": exclude_defaults}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields, floats, defaults = _layout(type(value))
        out: dict[str, Any] = {}
        for f in fields:
            name = f.name
            item = getattr(value, name)
            if exclude_none and item is None:
                continue
            if exclude_defaults and name in defaults and item == defaults[name]:
                continue
            if name in floats and type(item) is int:
                item = float(item)
            out[name] = dump(item, **flags)
        return out
    if isinstance(value, tuple | list):
        items = [
            dump(v, mode=mode, exclude_none=exclude_none, exclude_defaults=exclude_defaults) for v in value
        ]
        return items if mode == "json" or isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: dump(v, **flags) for k, v in value.items()}
    if mode == "json" and isinstance(value, dt.date):
        return value.isoformat()
    return value
