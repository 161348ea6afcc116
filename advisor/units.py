"""Provides parsing of human quantities: '13B' parameters, '2T' tokens, '20k' dollars, '3d' durations."""

from __future__ import annotations

import re

from advisor.errors import InputError

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^\s*\$?\s*(-?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(h|d|w|m|mo)?\s*$", re.IGNORECASE)
_DURATION_HOURS = {"": 1.0, "h": 1.0, "d": 24.0, "w": 168.0, "mo": 730.0, "m": 730.0}


def parse_count(text: str | float | int, what: str, *, positive: bool = True) -> float:
    """Parse '13B', '1.5T', '500M', '20k', '1e9' or a plain number; InputError names the bad value."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = _NUMBER.match(str(text))
        if not match:
            raise InputError(f"{what}: {text!r} is not a number; use e.g. 13B, 1.5T, 500M, 20k or 1e9")
        value = float(match.group(1)) * _SUFFIX[match.group(2).lower()]
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"{what}: {text!r} is not a finite number")
    if positive and value <= 0:
        raise InputError(f"{what}: {text!r} must be greater than 0")
    return value


def parse_hours(text: str | float | int, what: str) -> float:
    """Parse a duration in hours: '72', '72h', '3d', '2w', '1mo'."""
    if isinstance(text, (int, float)):
        hours = float(text)
    else:
        match = _DURATION.match(str(text))
        if not match:
            raise InputError(f"{what}: {text!r} is not a duration; use hours (72 or 72h), days (3d), weeks (2w) "
                             "or months (1mo)")
        hours = float(match.group(1)) * _DURATION_HOURS[(match.group(2) or "").lower()]
    if hours <= 0:
        raise InputError(f"{what}: {text!r} must be greater than 0")
    return hours


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
