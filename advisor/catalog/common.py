"""Provides what every knowledge type shares: sources, id normalisation, the codec of the validated-knowledge
cache, and (re-exported from advisor.question.records) the value constraints of record fields."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.question.records import (  # noqa: F401  (re-exported: the catalogue's types import them here)
    NON_EMPTY,
    CatalogueId,
    Check,
    EntryId,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    Title,
    fields_of,
)

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

_SEPARATORS = re.compile(r"[\s_/]+")


@functools.lru_cache(maxsize=1)
def shipped_root() -> Traversable | Path:
    """The shipped knowledge package's folder: importlib.resources gives the same Path for a package on disk,
    but importing it (zipfile, tempfile and their imports) costs more than a `gpus` command's own work, so it
    is used only for other installs (a zip)."""
    import knowledge

    folders = list(getattr(knowledge, "__path__", ()))
    if len(folders) == 1 and Path(folders[0]).is_dir():
        return Path(folders[0])
    from importlib import resources

    return resources.files("knowledge")


def normalise_id(text: str) -> str:
    """Return the lookup form of an id or alias: lower case, spaces, '_' and '/' as '-'."""
    return _SEPARATORS.sub("-", text.strip().lower()).strip("-")


def encode(value: Any) -> Any:
    """Plain records to JSON-ready data that decode() restores exactly (types, tuples and dates tagged)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        tag = f"{kind.__module__}:{kind.__qualname__}"
        return {"~r": tag, **{f.name: encode(getattr(value, f.name)) for f in fields_of(kind)}}
    if isinstance(value, tuple):
        return {"~t": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, dt.date):
        return {"~d": value.isoformat()}
    return value


def drop_none(value: Any) -> Any:
    """TOML has no null: leave absent what is None (dicts and lists, all the way down)."""
    if isinstance(value, dict):
        return {k: drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [drop_none(v) for v in value if v is not None]
    return value


def decode_object(obj: dict[str, Any]) -> Any:
    """json.loads object_hook undoing encode()."""
    if "~r" in obj:
        return record_type(obj.pop("~r"))(**obj)
    if "~t" in obj:
        return tuple(obj["~t"])
    if "~d" in obj:
        return dt.date.fromisoformat(obj["~d"])
    return obj


@functools.cache
def record_type(tag: str) -> Any:
    """The record type a cache entry names ("module:Name"): one of the core's, never anything else."""
    module, _, name = tag.partition(":")
    kind = getattr(importlib.import_module(module), name, None) if module.startswith("advisor.") else None
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
        raise KeyError(tag)  # a damaged or foreign entry: the cache is rebuilt
    return kind


class Figures:
    """Validates a section of sourced figures, declared as a typing.TypedDict (a dict whose keys mypy checks,
    declared in a tenth of a record type's time), as a dict holding exactly its keys, each validated as its
    annotated type: pydantic's own TypedDict support needs typing_extensions' on Python 3.11, whose import on
    every command would take back about half of what the sections save. Optional keys are declared in a base
    class with total=False."""

    __slots__ = ()

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        import typing

        from pydantic_core import core_schema

        fields = {
            key: core_schema.typed_dict_field(
                handler.generate_schema(hint), required=key in source.__required_keys__
            )
            for key, hint in typing.get_type_hints(source).items()
        }
        return core_schema.typed_dict_schema(fields, extra_behavior="forbid")


FIGURES = Figures()
"""The marker of a section of figures: `memory: Annotated[MemoryFigures, FIGURES]`."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Source:
    """Where a figure comes from: a repository file at a commit, a datasheet or a paper."""

    title: Title
    ref: Title
    """`owner/repo@commit:path`, or a document title."""
    url: str | None = None
    date: dt.date | None = None
    """When the cited figures were current, where known."""
    note: str = ""
