"""Provides `question`: a part of the user's question (the workload with its configuration, the constraints,
an ownership question) from what a door received: flags, the wizard, a --from file, a portfolio entry, a
stored calibration run.

Every value the field registry knows is parsed and bounded by it, in its words, whatever the door. What is
then plainly what the part holds (the registry's values, text, records the core built) makes the dataclass at
once; anything else (a key no field has, a table where a record goes, a number where text goes) is judged by
pydantic, imported only then."""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Mapping
from typing import Any, TypeVar

from advisor.job.inputs import RunConfig, Workload
from advisor.question.errors import InputError
from advisor.question.fields import FIELDS, check_values
from advisor.question.records import validate

Q = TypeVar("Q")
# A field holding another part: a table given there is read as that part (the registry checks its keys too).
_PARTS: dict[tuple[type, str], type] = {(Workload, "config"): RunConfig}


def question(kind: type[Q], data: Any) -> Q:
    """`data` as `kind`: raises InputError (the registry's or a part's own check) or pydantic's
    ValidationError (a ValueError) naming the field."""
    if isinstance(data, kind):
        return data
    if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
        return validate(kind, data)  # pydantic says what it expected
    checked = _checked(kind, data)
    stated = frozenset(k for k, v in checked.items() if v is not None)  # None: left to the default
    given = {"given": stated} if "given" in input_names(kind, every=True) else {}
    if _typed(kind, checked):
        return kind(**_built(kind, checked), **given)
    return validate(kind, {**checked, **given})


def validation_errors(exc: BaseException) -> list[Any] | None:
    """pydantic's errors, when exc is its ValidationError (pydantic is imported only where it judged)."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(exc, pydantic.ValidationError):
        return None
    return list(exc.errors())


def input_names(kind: type, *, every: bool = False) -> frozenset[str]:
    """The fields a door may give (with `every`, also those the door fills, such as the fields given)."""
    return _names(kind)[1 if every else 0]


@functools.cache
def _names(kind: type) -> tuple[frozenset[str], frozenset[str]]:
    fields = [f for f in dataclasses.fields(kind) if f.init]
    return frozenset(f.name for f in fields if f.compare), frozenset(f.name for f in fields)


@functools.cache
def _defaults(kind: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(kind)}


def _checked(kind: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The registry's parse of every value it knows (a part's table too); 'auto' left to the default."""
    refused = set(data) & (input_names(kind, every=True) - input_names(kind))
    if refused:
        key = min(refused)
        raise InputError(field=key, value=data[key], problem="is not an input", accepted="leave it out")
    checked = _named(check_values(data)) if kind is RunConfig else check_values(data)
    for owner, name in _PARTS:
        table = checked.get(name)
        if owner is kind and isinstance(table, Mapping):
            checked[name] = _named(check_values(table))
    return checked


def _named(config: dict[str, Any]) -> dict[str, Any]:
    """A configuration table with the stack the user named kept beside the stack it is answered as
    (`--stack pytorch`: stack 'fsdp', stack_named 'pytorch'), which the registry's value carries
    (fields.Aliased) and pydantic's Literal check would drop."""
    given = getattr(config.get("stack"), "given", None)
    return {**config, "stack_named": given} if given is not None else config


def _typed(kind: type, data: Mapping[str, Any]) -> bool:
    """Whether each value is plainly what the field holds: as the registry parsed it, text, a record the core
    built, None where None is the default, or a part's table of such values."""
    names, defaults = input_names(kind), _defaults(kind)
    for key, value in data.items():
        if key not in names:
            return False
        part = _PARTS.get((kind, key))
        if part is not None and isinstance(value, Mapping):
            if not _typed(part, value):
                return False
        elif value is None:
            if defaults[key] is not None:
                return False
        elif not dataclasses.is_dataclass(value):
            f = FIELDS.get(key)
            if (f is None or f.kind in ("text", "path")) and not isinstance(value, str):
                return False
    return True


def _built(kind: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The values with each part's table made that part."""
    out = dict(data)
    for (owner, name), part in _PARTS.items():
        if owner is kind and isinstance(out.get(name), Mapping):
            out[name] = part(**out[name])
    return out
