"""Provides `declare_fields`: a class's dataclass fields (`__dataclass_fields__` of `dataclasses.Field`, so
`dataclasses.fields`, `replace`, `asdict` and pydantic read them) and its slots, as `dataclasses.dataclass`
records them, without that function's per-class work.

On Python 3.11 `dataclasses.dataclass(init=False, repr=False, eq=False)` still spends about 0.2 ms a class
(matching each string annotation against ClassVar, InitVar and KW_ONLY through the module's namespace, and
more): 20 ms over the hundred types a command imports. This covers the declarations the project writes: plain
annotations, defaults, `field(...)`, ClassVar, inheritance from other such classes. A class using InitVar or
KW_ONLY, or a Python whose dataclasses module lacks the marker used here, is handed to `dataclasses.dataclass`
itself."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

# The marker dataclasses.fields() selects a field by (present from Python 3.7 to 3.13 at least).
_FIELD = getattr(dataclasses, "_FIELD", None)
_CLASSVAR = ("ClassVar", "typing.ClassVar", "t.ClassVar")
_HANDED_OVER = ("InitVar", "dataclasses.InitVar", "KW_ONLY", "dataclasses.KW_ONLY")


def declare_fields(cls: type, *, slots: bool, kw_only: bool) -> type:
    """`cls` with its dataclass fields recorded (and rebuilt with __slots__ when `slots`), no method made."""
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - as dataclasses reads them (3.11)
    kinds = {name: _kind(ann) for name, ann in own.items()}
    if _FIELD is None or "handover" in kinds.values():
        return dataclasses.dataclass(init=False, repr=False, eq=False, slots=slots, kw_only=kw_only)(cls)
    fields: dict[str, dataclasses.Field[Any]] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(base.__dict__.get("__dataclass_fields__", {}))
    for name, ann in own.items():
        if kinds[name] == "classvar":
            continue
        fields[name] = _field(cls, name, ann, kw_only)
    _check_order(cls, fields)
    made: Any = cls
    made.__dataclass_fields__ = fields
    if "__match_args__" not in cls.__dict__:
        made.__match_args__ = tuple(f.name for f in fields.values() if f.init and not f.kw_only)  # type: ignore[misc]
    return _with_slots(cls, fields) if slots else cls


def _kind(annotation: Any) -> str:
    """ "classvar", "handover" (InitVar, KW_ONLY: left to dataclasses) or "field"; a string annotation (under
    `from __future__ import annotations`) by its leading name, as the project writes them."""
    if isinstance(annotation, str):
        head = annotation.split("[", 1)[0].strip()
        return "classvar" if head in _CLASSVAR else "handover" if head in _HANDED_OVER else "field"
    if annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar:
        return "classvar"
    if annotation is dataclasses.KW_ONLY or annotation is dataclasses.InitVar:
        return "handover"
    return "handover" if isinstance(annotation, dataclasses.InitVar) else "field"


def _field(cls: type, name: str, annotation: Any, kw_only: bool) -> dataclasses.Field[Any]:
    """One field as dataclasses records it, the class attribute left as dataclasses leaves it."""
    default = cls.__dict__.get(name, dataclasses.MISSING)
    if isinstance(default, dataclasses.Field):
        f = default
        if f.default is dataclasses.MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, f.default)
    else:
        f = dataclasses.field(default=default)
    if f.default.__class__.__hash__ is None:  # as dataclasses: a shared mutable default is refused
        raise ValueError(
            f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory"
        )
    f.name = name
    f.type = annotation
    f._field_type = _FIELD  # type: ignore[attr-defined]
    if f.kw_only is dataclasses.MISSING:
        f.kw_only = kw_only
    return f


def _check_order(cls: type, fields: dict[str, dataclasses.Field[Any]]) -> None:
    """As dataclasses: a positional field without a default may not follow one with a default."""
    seen_default = False
    for f in fields.values():
        if not f.init or f.kw_only:
            continue
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if seen_default and not has_default:
            raise TypeError(f"{cls.__qualname__}: non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default


def _with_slots(cls: type, fields: dict[str, dataclasses.Field[Any]]) -> type:
    """The class rebuilt with a slot per field it adds, as dataclasses(slots=True) rebuilds it."""
    inherited: set[str] = set()
    for base in cls.__mro__[1:-1]:
        declared = base.__dict__.get("__slots__", ())
        inherited.update((declared,) if isinstance(declared, str) else declared)
    body = dict(cls.__dict__)
    body["__slots__"] = tuple(name for name in fields if name not in inherited)
    for name in fields:
        body.pop(name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    made = type(cls)(cls.__name__, cls.__bases__, body)
    made.__qualname__ = cls.__qualname__
    return made
