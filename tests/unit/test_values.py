"""value_type behaves as the dataclass it replaces: construction (shared, then compiled), repr, equality,
hashes, frozenness, copying and the dataclasses module's functions."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import field
from typing import ClassVar

import pytest

from advisor.question import values
from advisor.question.values import value_type


def _pair(**options: bool) -> tuple[type, type]:
    """One class body made twice: by value_type and by dataclasses."""

    def body() -> type:
        class Point:
            KIND: ClassVar[str] = "point"
            x: int
            y: float = 1.0
            tags: tuple[str, ...] = field(default_factory=tuple)
            label: str = field(default="p", kw_only=True)
            note: str = field(default="", compare=False, repr=False)
            seen: int = field(default=0, init=False)

        return Point

    frozen = options.get("frozen", True)
    slots = options.get("slots", False)
    ours = value_type(frozen=frozen, slots=slots)(body())
    theirs = dataclasses.dataclass(frozen=frozen, slots=slots)(body())
    return ours, theirs


CALLS = [
    ((1,), {}),
    ((1, 2.5), {"label": "q"}),
    ((), {"x": 3, "tags": ("a",), "note": "n"}),
    ((1, 2.0, ("b",)), {"note": "m"}),
]


@pytest.mark.parametrize(
    "options", [{}, {"slots": True}, {"frozen": False}, {"frozen": False, "slots": True}]
)
@pytest.mark.parametrize("rounds", [1, values.COMPILE_AT + 2])  # the shared __init__, then the compiled one
def test_instances_match_a_dataclass(options: dict[str, bool], rounds: int) -> None:
    ours, theirs = _pair(**options)
    for _ in range(rounds):
        for args, kwargs in CALLS:
            a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
            assert repr(a) == repr(b)
            assert dataclasses.asdict(a) == dataclasses.asdict(b)
            assert a == ours(*args, **kwargs)
            assert a != b  # different types are never equal, as between two dataclasses
            if options.get("frozen", True):
                # The same hash as the dataclass: sets and dicts of these iterate as before.
                assert hash(a) == hash(b)
                with pytest.raises(dataclasses.FrozenInstanceError):
                    a.x = 5
            else:
                with pytest.raises(TypeError):
                    hash(a)
                a.x = 5
                assert a.x == 5
    assert ("__init__" in ours.__dict__) and (ours.__init__ is not values._first_init) is (
        rounds > values.COMPILE_AT
    )


@pytest.mark.parametrize("rounds", [1, values.COMPILE_AT + 2])
def test_bad_arguments_are_refused_as_by_a_dataclass(rounds: int) -> None:
    ours, _ = _pair()
    for _ in range(rounds):
        ours(1)
    for args, kwargs in [
        ((), {}),
        ((1, 2.0, (), "n", 5), {}),
        ((1,), {"x": 2}),
        ((1,), {"seen": 1}),
        ((1,), {"z": 0}),
    ]:
        with pytest.raises(TypeError):
            ours(*args, **kwargs)


def test_compare_false_fields_are_not_compared_nor_hashed() -> None:
    ours, _ = _pair()
    assert ours(1, note="a") == ours(1, note="b")
    assert hash(ours(1, note="a")) == hash(ours(1, note="b"))
    assert ours(1) != ours(2)


def test_replace_copy_and_post_init() -> None:
    @value_type(slots=True)
    class Checked:
        a: int
        b: int = 0

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("a must be >= 0")

    for _ in range(values.COMPILE_AT + 1):
        with pytest.raises(ValueError, match="a must be"):
            Checked(-1)
    one = Checked(1, 2)
    assert dataclasses.replace(one, b=3) == Checked(1, 3)
    assert copy.deepcopy(one) == one and copy.copy(one) == one
    assert [f.name for f in dataclasses.fields(one)] == ["a", "b"]


def test_methods_the_class_wrote_are_kept() -> None:
    @value_type
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __hash__(self) -> int:
            return 7

    assert repr(Own(1)) == "own" and hash(Own(1)) == 7


def test_a_plain_subclass_may_add_attributes() -> None:
    @value_type
    class Base:
        a: int

    class Sub(Base):
        pass

    sub = Sub(1)
    sub.extra = 2  # as a subclass of a frozen dataclass that is not itself one
    with pytest.raises(dataclasses.FrozenInstanceError):
        sub.a = 3


FIELD_FACTS = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare", "kw_only")


@pytest.mark.parametrize("options", [{}, {"slots": True}])
def test_fields_are_recorded_as_dataclasses_records_them(options: dict[str, bool]) -> None:
    ours, theirs = _pair(**options)

    def facts(cls: type) -> list[tuple[object, ...]]:
        return [tuple(getattr(f, k) for k in FIELD_FACTS) for f in dataclasses.fields(cls)]

    assert facts(ours) == facts(theirs)
    assert ours.__match_args__ == theirs.__match_args__
    assert ours.KIND == "point" and "KIND" not in {f.name for f in dataclasses.fields(ours)}
    if options.get("slots"):
        assert ours.__slots__ == theirs.__slots__
        assert not hasattr(ours(1), "__dict__")

    @value_type(slots=options.get("slots", False))
    class Child(ours):  # type: ignore[misc, valid-type]
        extra: int = 0

    @dataclasses.dataclass(frozen=True, slots=options.get("slots", False))
    class TheirChild(theirs):  # type: ignore[misc, valid-type]
        extra: int = 0

    assert facts(Child) == facts(TheirChild)
    assert repr(Child(1, extra=2)).split("(", 1)[1] == repr(TheirChild(1, extra=2)).split("(", 1)[1]


def test_declarations_dataclasses_refuses_are_refused() -> None:
    with pytest.raises(ValueError, match="mutable default"):

        @value_type
        class Shared:
            items: list[int] = []  # the mistake refused

    with pytest.raises(TypeError, match="non-default argument"):

        @value_type
        class Order:
            a: int = 0
            b: int
