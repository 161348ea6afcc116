"""Provides what every knowledge type shares: the plain Record base (built from validated data, dumped like
pydantic's model_dump), sources, id normalisation, and the codec of the validated-knowledge cache."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any, ClassVar, TypeVar, cast, dataclass_transform

_SEPARATORS = re.compile(r"[\s_/]+")
R = TypeVar("R", bound="Record")

# Plain knowledge types by class name: the cache codec and the schema-to-plain conversion find them here.
RECORDS: dict[str, type[Record]] = {}


def normalise_id(text: str) -> str:
    """Return the lookup form of an id or alias: lower case, spaces, '_' and '/' as '-'."""
    return _SEPARATORS.sub("-", text.strip().lower()).strip("-")


# dataclass_transform tells type checkers what `record` makes, so constructor calls are checked field by
# field.
@dataclass_transform(frozen_default=True, kw_only_default=True)
def record(cls: type[R]) -> type[R]:
    """Make a Record subclass a frozen, slotted, keyword-only dataclass and register it by name.

    Knowledge is validated by the pydantic twin of the same name in advisor.catalog.schemas (on a cache miss
    only); commands then read these plain objects, which cost nothing to import or build."""
    made = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(cls)
    made._FIELDS = tuple(
        f.name for f in dataclasses.fields(cast(Any, made))
    )  # a dataclass from the line above
    RECORDS[made.__name__] = made
    return made


class Record:
    """Base of the plain knowledge types."""

    __slots__ = ()
    _FIELDS: ClassVar[tuple[str, ...]] = ()

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
            out[name] = _dump(value, mode, exclude_none)
        return out

    @classmethod
    def model_validate(cls: type[R], data: Any) -> R:
        """Validate data with this type's pydantic schema (raises pydantic's ValidationError) and return it
        plain."""
        from advisor.catalog import schemas

        return to_plain(getattr(schemas, cls.__name__).model_validate(data))


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
    if isinstance(value, tuple | list):
        items = [_dump(v, mode, exclude_none) for v in value]
        return items if mode == "json" or isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _dump(v, mode, exclude_none) for k, v in value.items()}
    if mode == "json" and isinstance(value, dt.date):
        return value.isoformat()
    return value


def to_plain(value: Any) -> Any:
    """A validated pydantic schema instance (or a container of them) as the plain records of the same
    names."""
    fields = getattr(type(value), "__pydantic_fields__", None)
    if fields is not None:
        plain = RECORDS[type(value).__name__]
        return plain(**{name: to_plain(getattr(value, name)) for name in fields})
    if isinstance(value, tuple):
        return tuple(to_plain(v) for v in value)
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def encode(value: Any) -> Any:
    """Plain records to JSON-ready data that decode() restores exactly (types, tuples and dates tagged)."""
    if isinstance(value, Record):
        return {"~r": type(value).__name__, **{n: encode(getattr(value, n)) for n in value._FIELDS}}
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
        return RECORDS[obj.pop("~r")](**obj)
    if "~t" in obj:
        return tuple(obj["~t"])
    if "~d" in obj:
        return dt.date.fromisoformat(obj["~d"])
    return obj


@record
class Source(Record):
    """Where a figure comes from: a repository file at a commit, a datasheet or a paper."""

    title: str
    ref: str
    """`owner/repo@commit:path`, or a document title."""
    url: str | None = None
    date: dt.date | None = None
    """When the cited figures were current, where known."""
    note: str = ""


def __getattr__(name: str) -> Any:
    # Strict (the pydantic base of input schemas) is imported from here by older code; loading it imports
    # pydantic, so only code that validates pays for it.
    if name == "Strict":
        from advisor.catalog.strict import Strict

        return Strict
    raise AttributeError(name)
