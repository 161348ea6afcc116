"""Provides parsing of human quantities: '13B' parameters, '2T' tokens, '20k' dollars, '3d' durations."""

from __future__ import annotations

import math
import re

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^\s*\$?\s*(-?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$", re.IGNORECASE)
_PLAIN = re.compile(r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?\s*$", re.IGNORECASE)
"""A number without a unit or a suffix ('30m' is a duration, never 30 million hours)."""
_DURATION_HOURS = {"": 1.0, "h": 1.0, "min": 1 / 60, "d": 24.0, "w": 168.0, "mo": 730.0}
DURATION_EXAMPLES = "use minutes (30min), hours (72 or 72h), days (3d), weeks (2w) or months (1mo)"


def number_of(text: str | float | int) -> float | None:
    """'13B', '1.5T', '500M', '$20k', '1e9' or a plain number as a float (inf when too large to hold), or
    None when it is not a number. Each input's bounds are the field registry's (advisor.question.fields)."""
    if isinstance(text, (int, float)):
        try:
            return float(text)
        except OverflowError:  # an integer past a float's range
            return math.inf if text > 0 else -math.inf
    match = _NUMBER.match(str(text))
    if not match:
        return None
    return float(match.group(1)) * _SUFFIX[match.group(2).lower()]


def parse_duration(text: str | float | int) -> tuple[float, str, str]:
    """(hours, problem, accepted) of a duration: '72', '72h', '30min', '3d', '2w', '1mo'; problem is '' when
    it reads, else what is wrong ('m' is refused as ambiguous: minutes or months)."""
    if isinstance(text, (int, float)) or _PLAIN.match(text):  # a bare number is hours: 72, 1.5, 1e3
        return number_of(text) or 0.0, "", ""
    match = _DURATION.match(str(text))
    unit = match.group(2).lower() if match else ""
    if match and unit == "m":
        n = match.group(1)
        return (
            0.0,
            "is ambiguous: m could be minutes or months",
            f"say {n}min for minutes or {n}mo for months",
        )
    if not match or unit not in _DURATION_HOURS:
        return 0.0, "is not a duration", DURATION_EXAMPLES
    return float(match.group(1)) * _DURATION_HOURS[unit], "", ""


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
