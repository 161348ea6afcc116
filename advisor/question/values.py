"""Provides `value_type`: a dataclass whose methods are written once for every type rather than compiled
for each.

On Python 3.11 the dataclasses module compiles each type's `__init__`, `__repr__`, `__eq__`, `__hash__` and
frozen `__setattr__`/`__delattr__` from source, about 1.5 ms a type: over the ~80 types a command imports,
the largest share of its start-up. Here the dataclasses module keeps only the field bookkeeping (so
`dataclasses.fields`, `replace`, `asdict` and pydantic's schema work unchanged); `__repr__`, `__eq__`,
`__hash__` and the frozen methods are shared functions reading the field names kept on the type, with a
frozen dataclass's exact results (hashes included: sets and dicts iterate as before); `__init__`, the one
that must be as fast as a dataclass's, is compiled on a type's first instance, so the many types a command
imports but never builds cost nothing."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, TypeVar, cast, dataclass_transform, overload

from advisor.question.value_fields import declare_fields

T = TypeVar("T", bound=type)

_FACTORY = object()  # the default of a field with a default factory, as in dataclasses


@overload
def value_type(cls: T, /) -> T: ...
@overload
def value_type(*, frozen: bool = True, slots: bool = False, kw_only: bool = False) -> Callable[[T], T]: ...


# dataclass_transform: type checkers check constructor calls field by field, as for a dataclass.
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def value_type(cls: Any = None, /, *, frozen: bool = True, slots: bool = False, kw_only: bool = False) -> Any:
    """As `dataclasses.dataclass(frozen=frozen, slots=slots, kw_only=kw_only)`, with the methods above."""

    def wrap(cls: T) -> T:
        return make_value_type(cls, frozen=frozen, slots=slots, kw_only=kw_only)

    return wrap if cls is None else wrap(cls)


def make_value_type(cls: T, *, frozen: bool, slots: bool, kw_only: bool) -> T:
    """The dataclass of `cls` with shared methods (see the module docstring)."""
    made = cast(Any, declare_fields(cls, slots=slots, kw_only=kw_only))
    fields = dataclasses.fields(made)
    made.__value_repr__ = tuple(f.name for f in fields if f.repr)
    made.__value_compared__ = _tuple_getter(tuple(f.name for f in fields if f.compare))
    # As dataclasses: a method the class body wrote itself is kept.
    own = made.__dict__
    class_hash = own.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in own))
    for name, method in (("__init__", _first_init), ("__repr__", _repr), ("__eq__", _eq)):
        if name not in own:
            setattr(made, name, method)
    if frozen:
        made.__value_frozen__ = frozenset(f.name for f in fields)
        made.__value_hashed__ = _tuple_getter(
            tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        )
        made.__setattr__ = _frozen_setattr
        made.__delattr__ = _frozen_delattr
        if slots:  # as dataclasses: copying must not go through the frozen __setattr__
            made.__getstate__ = _getstate
            made.__setstate__ = _setstate
    if not explicit_hash:
        # A frozen dataclass hashes its compared fields; a mutable one with eq is unhashable.
        made.__hash__ = _hash if frozen else None
    return cast(T, made)


def _tuple_getter(names: tuple[str, ...]) -> Any:
    """A function giving an object's named attributes as a tuple (operator.attrgetter's speed)."""
    if len(names) > 1:
        return staticmethod(operator.attrgetter(*names))
    if names:
        one = operator.attrgetter(names[0])
        return staticmethod(lambda obj: (one(obj),))
    return staticmethod(lambda obj: ())


def _repr(self: Any) -> str:
    fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__value_repr__)
    return f"{type(self).__qualname__}({fields})"


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is self.__class__:
        return bool(self.__value_compared__(self) == self.__value_compared__(other))
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__value_hashed__(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    # As dataclasses: a field, or any name on the frozen type itself, is refused; a subclass that is not a
    # value type may add attributes of its own.
    cls = type(self)
    if "__value_frozen__" in cls.__dict__ or name in cls.__value_frozen__:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _frozen_delattr(self: Any, name: str) -> None:
    cls = type(self)
    if "__value_frozen__" in cls.__dict__ or name in cls.__value_frozen__:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=True):
        object.__setattr__(self, f.name, value)


# A type's first instances are built by one shared function; its own `__init__` is compiled at this count.
# Most types a command uses are built a few times (a catalogue entry, a step time, a report part): compiling
# theirs would cost more than it saves; the few built by the hundred (layouts, offers) get a dataclass's.
COMPILE_AT = 16


def _first_init(self: Any, *args: Any, **kwargs: Any) -> None:
    """A value type's `__init__` until it has been called COMPILE_AT times: then it compiles the real one
    and installs it on the type."""
    cls = type(self)
    calls = cls.__dict__.get("__value_calls__", 0) + 1
    if calls < COMPILE_AT:
        cls.__value_calls__ = calls
        _build(self, cls, args, kwargs)
        return
    init = compile_init(cls)
    cls.__init__ = init
    init(self, *args, **kwargs)


def _build(self: Any, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """What the compiled `__init__` does, read from the fields: the arguments bound as a dataclass binds
    them, defaults and factories filled in, fields set past the frozen `__setattr__`, `__post_init__` run."""
    spec = cls.__dict__.get("__value_spec__") or _init_spec(cls)
    positional, accepted, fields = spec
    name = f"{cls.__qualname__}.__init__()"
    if len(args) > len(positional):
        raise TypeError(
            f"{name} takes {len(positional) + 1} positional arguments but {len(args) + 1} were given"
        )
    values = dict(zip(positional, args, strict=False))
    for key in kwargs:
        if key not in accepted:
            raise TypeError(f"{name} got an unexpected keyword argument {key!r}")
        if key in values:
            raise TypeError(f"{name} got multiple values for argument {key!r}")
    values.update(kwargs)
    for field, init, default, factory in fields:
        if init and field in values:
            value = values[field]
        elif default is not dataclasses.MISSING:
            value = default
        elif factory is not dataclasses.MISSING:
            value = factory()
        elif init:
            raise TypeError(f"{name} missing 1 required argument: {field!r}")
        else:
            continue  # no value to set: as a dataclass leaves it
        object.__setattr__(self, field, value)
    if hasattr(cls, "__post_init__"):
        self.__post_init__()


def _init_spec(cls: type) -> tuple[tuple[str, ...], frozenset[str], tuple[tuple[str, bool, Any, Any], ...]]:
    """A type's parameters for `_build`, kept on the type."""
    fields = dataclasses.fields(cast(Any, cls))
    positional = tuple(f.name for f in fields if f.init and not f.kw_only)
    accepted = frozenset(f.name for f in fields if f.init)
    spec = (positional, accepted, tuple((f.name, f.init, f.default, f.default_factory) for f in fields))
    cls.__value_spec__ = spec  # type: ignore[attr-defined]
    return spec


def compile_init(cls: type) -> Any:
    """The `__init__` a dataclass of these fields would have: positional then keyword-only parameters,
    defaults, default factories, fields set without `__setattr__` (so frozen types can be built), then
    `__post_init__`."""
    scope: dict[str, Any] = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cast(Any, cls)):
        name, value, default = f.name, f.name, ""
        if f.default is not dataclasses.MISSING:
            scope[f"_d_{name}"] = f.default
            default = f"_d_{name}"
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_f_{name}"] = f.default_factory
            default = "_FACTORY"
            value = f"_f_{name}() if {name} is _FACTORY else {name}" if f.init else f"_f_{name}()"
        elif not f.init:
            continue  # no value to set: as a dataclass leaves it
        if f.init:
            (keyword if f.kw_only else positional).append(f"{name}={default}" if default else name)
        elif default != "_FACTORY":
            value = default
        body.append(f"    _set(self, {name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ["self", *positional, *(["*", *keyword] if keyword else [])]
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(
        compile(source, f"<value type {cls.__qualname__}>", "exec"), scope
    )  # our own source, from field names
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init
