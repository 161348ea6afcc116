"""Provides parsing of human quantities: '13B' parameters, '2T' tokens, '20k' dollars, '3d' durations."""

from __future__ import annotations

import re

from advisor.question.errors import InputError

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^\s*\$?\s*(-?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$", re.IGNORECASE)
_DURATION_HOURS = {"": 1.0, "h": 1.0, "min": 1 / 60, "d": 24.0, "w": 168.0, "mo": 730.0}
_NUMBER_EXAMPLES = "use e.g. 13B, 1.5T, 500M, 20k or 1e9"
_DURATION_EXAMPLES = "use minutes (30min), hours (72 or 72h), days (3d), weeks (2w) or months (1mo)"

# Upper bounds past which a value is a typo, not a plan (1e30 tokens would print a 27-digit price).
# Each is far above any real job: 10T parameters, a quadrillion tokens, ten billion dollars.
LIMITS: dict[str, float] = {
    "params": 1e13,
    "tokens": 1e15,
    "samples": 1e12,
    "epochs": 1e4,
    "seq_len": 1e7,
    "prompt_tokens": 1e7,
    "output_tokens": 1e7,
    "requests_per_s": 1e6,
    "tpot_ms": 6e4,
    "ttft_ms": 6e5,
    "budget_usd": 1e10,
    "deadline_hours": 87_600.0,  # ten years
}
WHOLE = frozenset({"samples", "seq_len", "prompt_tokens", "output_tokens", "tokens"})
"""Inputs that count whole things: 0.5 samples is a typo."""


def _bounded(value: float, text: object, what: str, field: str | None, positive: bool) -> float:
    """The value, or InputError (with its fields) when it is not finite, not positive or absurdly large."""

    def fail(problem: str, accepted: str) -> InputError:
        return InputError(
            f"{what}: {text!r} {problem}; {accepted}",
            field=field,
            value=text,
            problem=problem,
            accepted=accepted,
        )

    if value != value or value in (float("inf"), float("-inf")):
        raise fail("is not a finite number", _NUMBER_EXAMPLES)
    if positive and value <= 0:
        raise fail("must be greater than 0", _NUMBER_EXAMPLES)
    limit = LIMITS.get(field or "")
    if limit is not None and value > limit:
        raise fail("is too large", f"at most {human(limit)}")
    if field in WHOLE and value != int(value):
        raise fail("must be a whole number", "e.g. 200k or 4096")
    return value


def parse_count(
    text: str | float | int, what: str, *, positive: bool = True, field: str | None = None
) -> float:
    """Parse '13B', '1.5T', '500M', '20k', '1e9' or a plain number; InputError names the bad value.

    ``what`` names the input in the message (the CLI passes its flag); ``field`` is the input's model name,
    given to the error as a field and used to apply that input's bounds (LIMITS, WHOLE).
    """
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = _NUMBER.match(str(text))
        if not match:
            raise InputError(
                f"{what}: {text!r} is not a number; {_NUMBER_EXAMPLES}",
                field=field,
                value=text,
                problem="is not a number",
                accepted=_NUMBER_EXAMPLES,
            )
        value = float(match.group(1)) * _SUFFIX[match.group(2).lower()]
    return _bounded(value, text, what, field, positive)


def parse_hours(text: str | float | int, what: str, *, field: str | None = None) -> float:
    """Parse a duration in hours: '72', '72h', '30min', '3d', '2w', '1mo'; a bare 'm' is refused as
    ambiguous."""
    if isinstance(text, (int, float)):
        hours = float(text)
    else:
        match = _DURATION.match(str(text))
        unit = match.group(2).lower() if match else ""
        if match and unit == "m":
            problem = "is ambiguous: m could be minutes or months"
            accepted = f"say {match.group(1)}min for minutes or {match.group(1)}mo for months"
            raise InputError(
                f"{what}: {text!r} {problem}; {accepted}",
                field=field,
                value=text,
                problem=problem,
                accepted=accepted,
            )
        if not match or unit not in _DURATION_HOURS:
            raise InputError(
                f"{what}: {text!r} is not a duration; {_DURATION_EXAMPLES}",
                field=field,
                value=text,
                problem="is not a duration",
                accepted=_DURATION_EXAMPLES,
            )
        hours = float(match.group(1)) * _DURATION_HOURS[unit]
    return _bounded(hours, text, what, field, True)


def human(n: float, unit: str = "") -> str:
    """Format a count compactly: 70.0B, 2.0T, 512."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{suffix}{unit}"
    return f"{n:.3g}{unit}"


def fmt_hours(hours: float) -> str:
    """A duration for people: '45 min', '3.2 h', '4.1 d'."""
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 72:
        return f"{hours:.1f} h"
    return f"{hours / 24:,.1f} d"
