"""The shared numeric checks: finite, in range, whole where it must be; one line naming value and range."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.question.checks import Bound, escape_controls, in_bound
from advisor.question.errors import InputError
from advisor.question.fields import FIELDS, check

BOUNDED = sorted(name for name, f in FIELDS.items() if f.bound is not None)


@given(
    st.sampled_from(BOUNDED),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.text(),
    ),
)
def test_every_value_is_accepted_in_range_or_refused_in_one_line(field: str, value: object) -> None:
    bound = FIELDS[field].bound
    assert bound is not None
    try:
        got = check(field, value)
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(f"{field}: ")  # noqa: PT017 - either outcome is valid
        assert exc.field == field and exc.problem  # noqa: PT017 - structured: front ends name the input
        return
    if got is None:  # blank or 'auto': left to the search
        assert FIELDS[field].auto or not str(value).strip()
        return
    assert math.isfinite(got) and bound.lo <= got <= bound.hi
    assert not bound.integer or got == int(got)


@pytest.mark.parametrize(
    "value,needle",
    [
        (float("inf"), "not a finite number"),
        ("1e400", "not a finite number"),
        (float("nan"), "not a finite number"),
        ("x", "not a number"),
        (True, "not a number"),
        (0, "must be greater than 0"),
        (2.5, "must be a whole number"),
    ],
)
def test_messages_name_the_value(value: object, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        in_bound(value, "v", Bound(0, 10, integer=isinstance(value, float) and value == 2.5, lo_open=True))


def test_control_characters_are_escaped() -> None:
    assert escape_controls("a\x1b[31mb\u202ec\x07") == "a\\x1b[31mb\\u202ec\\x07"
