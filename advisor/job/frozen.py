"""Provides Frozen: the base of the user's question (workload, constraints, configuration), frozen and
validated without importing pydantic where every value is plainly of its declared type.

Each field is declared once, on the class. A value that is not plainly right (a string for a number, an
unknown key, a check that fails) is handed to a pydantic twin built from the same declarations, so every
refusal keeps pydantic's words and every coercion its result; the twin is built only then. The interface is
the part of pydantic's BaseModel the project uses (model_validate, model_dump, model_copy,
model_fields_set)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import FrozenInstanceError
from typing import Any, ClassVar, Literal, TypeVar

from advisor.question.fields import check_values
from advisor.question.records import Check, Record

F = TypeVar("F", bound="Frozen")
Checker = Callable[[Any], Any]


T = TypeVar("T")


def _per_class(make: Callable[[Any], T]) -> Callable[[Any], T]:
    """make(cls), computed once per class (functools.cache, without its Hashable bound on the argument)."""
    made: dict[type, T] = {}

    def get(cls: Any) -> T:
        if cls not in made:
            made[cls] = make(cls)
        return made[cls]

    return get


class _Slow(Exception):
    """A value the plain path does not vouch for: pydantic judges it."""


class Frozen:
    """A frozen record of the user's inputs; subclasses declare fields as class annotations with defaults."""

    __slots__ = ("__dict__", "_given")
    _given: frozenset[str]
    """The fields given (pydantic's model_fields_set)."""
    model_fields: ClassVar[dict[str, Any]] = {}
    """Each field's default, by name (the names are what callers read)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = inspect.get_annotations(cls)
        names = [n for n, t in own.items() if not str(t).startswith("ClassVar")]
        cls.model_fields = {n: getattr(cls, n) for n in names}

    def __init__(self, **data: Any) -> None:
        values, given = _validated(type(self), data)
        object.__setattr__(self, "__dict__", values)
        object.__setattr__(self, "_given", given)

    @staticmethod
    def _before(data: Any) -> Any:
        # Every door (flags, the wizard, --from files, code) builds these: the field registry's bounds and
        # words hold here, once, whatever the door.
        return check_values(data) if isinstance(data, dict) else data

    @classmethod
    def _field_checks(cls) -> dict[str, Checker]:
        """Checks of one given field's valid value, by field (pydantic's field validators)."""
        return {}

    # Checks run after the fields are valid (pydantic's "after" model validators); they read attributes only,
    # so the twin runs the same ones.
    @staticmethod
    def _check(obj: Any) -> None:
        return None

    @classmethod
    def model_validate(cls: type[F], data: Any) -> F:
        if isinstance(data, cls):
            return data
        if isinstance(data, Mapping) and all(isinstance(k, str) for k in data):
            return cls(**data)
        return _from_twin(cls, _twin(cls).model_validate(data))

    @property
    def model_fields_set(self) -> set[str]:
        return set(self._given)

    def model_copy(self: F, *, update: Mapping[str, Any] | None = None) -> F:
        """A copy with update's values set unchecked, as pydantic's model_copy."""
        new = object.__new__(type(self))
        object.__setattr__(new, "__dict__", {**self.__dict__, **(update or {})})
        object.__setattr__(new, "_given", self._given | frozenset(update or ()))
        return new

    def model_dump(
        self,
        *,
        mode: str = "python",
        exclude_none: bool = False,
        exclude_defaults: bool = False,
        exclude_unset: bool = False,
    ) -> dict[str, Any]:
        """The fields as a dict, as pydantic's model_dump gives them."""
        flags = {"exclude_none": exclude_none, "exclude_defaults": exclude_defaults}
        out: dict[str, Any] = {}
        for name, default in self.model_fields.items():
            value = self.__dict__[name]
            if (exclude_unset and name not in self._given) or (exclude_none and value is None):
                continue
            if exclude_defaults and value == default:
                continue
            if isinstance(value, Frozen):
                out[name] = value.model_dump(mode=mode, exclude_unset=exclude_unset, **flags)
            elif isinstance(value, Record):
                out[name] = value.model_dump(mode=mode, **flags)
            elif isinstance(value, tuple) and mode == "json":
                out[name] = list(value)
            else:
                out[name] = value
        return out

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __iter__(self) -> typing.Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        # A pydantic model holding one of these (a fleet portfolio) validates it with the twin.
        from pydantic_core import core_schema

        def serialize(value: Frozen, info: Any) -> Any:
            return value.model_dump(
                mode=info.mode,
                exclude_none=info.exclude_none,
                exclude_defaults=info.exclude_defaults,
                exclude_unset=info.exclude_unset,
            )

        return core_schema.no_info_before_validator_function(
            _as_input,
            core_schema.no_info_after_validator_function(
                functools.partial(_from_twin, cls), handler.generate_schema(_twin(cls))
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(serialize, info_arg=True),
        )


def _validated(cls: type[Frozen], data: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The field values and the names given: the plain path, else pydantic's (which raises its error)."""
    try:
        return _plain(cls, data)
    except Exception:  # noqa: BLE001  (whatever went wrong, pydantic says it in its own words)
        made = _from_twin(cls, _twin(cls).model_validate(_as_input(data)))
        return made.__dict__, made._given


def _plain(cls: type[Frozen], data: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    data = cls._before(data)
    checkers = _checkers(cls)
    if not data.keys() <= checkers.keys():
        raise _Slow("unknown field")
    values = {n: (checkers[n](data[n]) if n in data else d) for n, d in cls.model_fields.items()}
    for name, check in cls._field_checks().items():
        if name in data:
            values[name] = check(values[name])
    cls._check(_Attrs(values))
    return values, frozenset(data)


class _Attrs:
    """Values read as attributes (what the after-checks take)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


@_per_class
def _checkers(cls: Any) -> dict[str, Checker]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return {name: _checker(hints[name]) for name in cls.model_fields}


def _checker(hint: Any) -> Checker:
    """A function that returns the value as pydantic would hold it, or raises _Slow when unsure."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _optional(args)
    if origin is typing.Annotated:
        return _bounded(_checker(args[0]), [m for m in hint.__metadata__ if isinstance(m, Check)])
    if origin is Literal:
        return lambda v: v if any(type(v) is type(a) and v == a for a in args) else _refuse(v)
    if origin is tuple and args == (str, Ellipsis):
        return _str_tuple
    if origin is dict and args == (str, str):
        return _str_dict
    return _class_checker(hint)


def _optional(args: tuple[Any, ...]) -> Checker:
    """`X | None`; any other union is left to pydantic."""
    inner = [_checker(a) for a in args if a is not type(None)]
    if len(inner) != 1 or len(args) != 2:
        return _refuse
    return lambda v: None if v is None else inner[0](v)


def _class_checker(hint: Any) -> Checker:
    """A nested question (a mapping checked in turn), a knowledge record, or a scalar."""
    if isinstance(hint, type) and issubclass(hint, Frozen):
        return lambda v: v if isinstance(v, hint) else hint(**_plain_dict(v))
    if isinstance(hint, type) and issubclass(hint, Record):
        return lambda v: v if type(v) is hint else _record(hint, v)
    return _SCALARS.get(hint, _refuse)


def _bounded(base: Checker, checks: list[Check]) -> Checker:
    keys = {k: v for c in checks for k, v in c.keys.items()}
    if not keys.keys() <= {"gt", "ge", "min_length", "pattern"}:
        return _refuse

    def check(v: Any) -> Any:
        v = base(v)
        if ("gt" in keys and not v > keys["gt"]) or ("ge" in keys and not v >= keys["ge"]):
            raise _Slow(v)
        if "min_length" in keys and not len(v) >= keys["min_length"]:
            raise _Slow(v)
        # A line break is left to pydantic: its `$` and Python's differ before a final newline.
        if "pattern" in keys and ("\n" in v or not re.search(keys["pattern"], v)):
            raise _Slow(v)
        return v

    return check


def _record(kind: type[Record], v: Any) -> Record:
    """A knowledge record given as a mapping (a custom model's shape): each field plainly of its type."""
    checkers = _record_checkers(kind)
    if not isinstance(v, dict) or not v.keys() <= checkers.keys():
        raise _Slow(v)
    return kind(**{name: checkers[name](value) for name, value in v.items()})


@_per_class
def _record_checkers(kind: Any) -> dict[str, Checker]:
    hints = typing.get_type_hints(kind, include_extras=True)
    return {f.name: _checker(hints[f.name]) for f in dataclasses.fields(kind)}


def _str_dict(v: Any) -> dict[str, str]:
    if isinstance(v, dict) and all(type(k) is str and type(x) is str for k, x in v.items()):
        return dict(v)
    raise _Slow(v)


def _plain_dict(v: Any) -> dict[str, Any]:
    # A nested model given as a mapping is checked on the plain path too; a refusal sends the whole
    # question to pydantic, so that its error is located as pydantic locates it.
    if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
        raise _Slow(v)
    return v


def _refuse(v: Any) -> Any:
    raise _Slow(v)


def _float(v: Any) -> float:
    if type(v) is float or type(v) is int:
        return float(v)
    raise _Slow(v)


def _exact(kind: type) -> Checker:
    return lambda v: v if type(v) is kind else _refuse(v)


def _str_tuple(v: Any) -> tuple[str, ...]:
    if isinstance(v, tuple | list) and all(type(x) is str for x in v):
        return tuple(v)
    raise _Slow(v)


_SCALARS: dict[Any, Checker] = {float: _float, int: _exact(int), str: _exact(str), bool: _exact(bool)}


def _as_input(data: Any) -> Any:
    """data with every Frozen value inside given as the fields it was given (what pydantic reads)."""
    if isinstance(data, Frozen):
        return {k: _as_input(v) for k, v in data.__dict__.items() if k in data._given}
    if isinstance(data, dict):
        return {k: _as_input(v) for k, v in data.items()}
    return data


def _from_twin(cls: type[F], made: Any) -> F:
    """The Frozen of a twin's validated model (nested twins converted too)."""
    if isinstance(made, cls):
        return made
    hints = _field_types(cls)
    new = object.__new__(cls)
    values = {}
    for name in cls.model_fields:
        value = getattr(made, name)
        kind = hints[name]
        values[name] = _from_twin(kind, value) if kind is not None and value is not None else value
    object.__setattr__(new, "__dict__", values)
    object.__setattr__(new, "_given", frozenset(made.model_fields_set))
    return new


@_per_class
def _field_types(cls: Any) -> dict[str, type[Frozen] | None]:
    """The Frozen type of each field that holds one (None for the others)."""
    hints = typing.get_type_hints(cls)
    return {n: _frozen_in(hints[n]) for n in cls.model_fields}


def _frozen_in(hint: Any) -> type[Frozen] | None:
    for kind in (hint, *typing.get_args(hint)):
        if isinstance(kind, type) and issubclass(kind, Frozen):
            return kind
    return None


@_per_class
def _twin(cls: Any) -> Any:
    """The pydantic model declared by cls's fields and checks (built on first need)."""
    from pydantic import ConfigDict, create_model, field_validator, model_validator

    hints = typing.get_type_hints(cls, include_extras=True)
    fields: dict[str, Any] = {}
    for name, default in cls.model_fields.items():
        kind = _frozen_in(hints[name])
        twin_hint = hints[name] if kind is None else _swap(hints[name], kind, _twin(kind))
        if kind is not None and default is not None:
            default = _twin(kind).model_validate(_as_input(default))
        fields[name] = (twin_hint, default)
    validators: dict[str, Any] = {
        "bounds_": model_validator(mode="before")(classmethod(lambda _c, data: cls._before(data))),  # type: ignore[arg-type]
        "check_": model_validator(mode="after")(lambda self: (cls._check(self), self)[1]),
    }
    for name, check in cls._field_checks().items():
        validators[f"check_{name}"] = field_validator(name)(classmethod(_validator(check)))
    return create_model(
        cls.__name__,
        __config__=ConfigDict(extra="forbid", frozen=True),
        __validators__=validators,
        __module__=cls.__module__,
        **fields,
    )


def _validator(check: Checker) -> Callable[[Any, Any], Any]:
    def validate(_cls: Any, value: Any) -> Any:
        return check(value)

    return validate


def _swap(hint: Any, old: type, new: Any) -> Any:
    if hint is old:
        return new
    return typing.Union[tuple(new if a is old else a for a in typing.get_args(hint))]  # noqa: UP007
