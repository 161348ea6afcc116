"""Provides the shared numeric input checks: finite, in range, whole where it must be, and safe-to-show
text."""

from __future__ import annotations

import math
from typing import NamedTuple

from advisor.question.errors import InputError


class Bound(NamedTuple):
    """What a number is accepted as: a closed or open range, and whether it must be whole."""

    lo: float
    hi: float
    integer: bool = False
    lo_open: bool = False
    hi_open: bool = False

    def num(self, x: float) -> str:
        """A limit as text: short (1e+12, 0.5), but exact where a whole number's short form is not
        (4,194,304, never 4.1943e+06)."""
        short = f"{x:g}"
        return f"{int(x):,}" if self.integer and x == int(x) and float(short) != x else short

    def low(self) -> str:
        return f"greater than {self.num(self.lo)}" if self.lo_open else f"at least {self.num(self.lo)}"

    def high(self) -> str:
        return f"less than {self.num(self.hi)}" if self.hi_open else f"at most {self.num(self.hi)}"

    def accepted(self) -> str:
        """The accepted range in words, e.g. 'a whole number at least 1 and at most 4,194,304'."""
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} {self.low()} and {self.high()}"


def finite(value: object, what: str) -> float:
    """value as a finite float; InputError names the value when it is not a number, NaN or infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{what}: {shown(value)} is not a number")
    try:
        number = float(value)
    except (ValueError, OverflowError) as exc:
        raise InputError(f"{what}: {shown(value)} is not a number") from exc
    if not math.isfinite(number):
        raise InputError(f"{what}: {shown(value)} is not a finite number")
    return number


def in_bound(
    value: object, what: str, bound: Bound, given: object = None, field: str | None = None
) -> float | int:
    """value checked against bound: finite, in range, whole when the bound says so; messages show given (what
    the user typed, e.g. '20k') when it differs from the parsed value. field: the input's model name, given to
    the error so that a front end can name the input its own way."""
    number = finite(value, what)
    value = value if given is None else given

    def fail(problem: str) -> InputError:
        return InputError(
            f"{what}: {shown(value)} {problem} (accepted: {bound.accepted()})",
            field=field,
            value=value,
            problem=problem,
            accepted=bound.accepted(),
        )

    too_low = number <= bound.lo if bound.lo_open else number < bound.lo
    too_high = number >= bound.hi if bound.hi_open else number > bound.hi
    if too_low:
        raise fail(f"must be {bound.low()}")
    if too_high:
        raise fail(f"must be {bound.high()}")
    if bound.integer:
        if number != int(number):
            raise fail("must be a whole number")
        return int(number)
    return number


# Control characters (C0, DEL and C1, line/paragraph separators, bidi embeddings and isolates), each with
# its \x.. escape: str.translate does in C what a regex would, without compiling one (about 1 ms) per run.
_CONTROLS = (
    *range(0x20),
    *range(0x7F, 0xA0),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
)
_ESCAPES = {c: chr(c).encode("unicode_escape").decode("ascii") for c in _CONTROLS}
_DROP = dict.fromkeys(_CONTROLS)


def has_controls(text: str) -> bool:
    """Whether text holds a control character (an escape sequence, a NUL, a bidi override)."""
    return len(text.translate(_DROP)) != len(text)


def escape_controls(text: str) -> str:
    """text with control characters (terminal escapes, bidi overrides) shown as \\x.. escapes, not obeyed."""
    return text.translate(_ESCAPES)


def shown(value: object, limit: int = 80) -> str:
    """A value as a message may show it: repr, control characters escaped, long values cut."""
    text = escape_controls(repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _nearest_file(path: str) -> str:
    """'; did you mean 'plan.toml'?' for the closest name in the missing file's folder (difflib, as a mistyped
    choice), '' when none is close or the folder cannot be listed (the first 1,000 names only)."""
    import difflib
    import itertools
    import os

    folder, name = os.path.split(path)
    try:
        with os.scandir(folder or ".") as entries:
            names = [e.name for e in itertools.islice(entries, 1000)]
    except OSError:
        return ""
    found = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f"; did you mean {shown(os.path.join(folder, found[0]))}?" if found else ""


def read_input_text(path: str, what: str, max_bytes: int) -> str:
    """The UTF-8 text of a file the user named: a regular file only (never a FIFO, device or directory, which
    could block or never end), at most max_bytes, a leading BOM dropped; InputError says what is wrong."""
    import os
    import stat

    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise InputError(f"{what} {shown(path)}: {kind}; give a regular file")
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open() still returns at once.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InputError(f"{what} {shown(path)}: not a regular file; give a regular file")
            data = handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise InputError(f"{what} {shown(path)}: no such file{_nearest_file(path)}") from exc
    except OSError as exc:
        raise InputError(f"{what} {shown(path)}: cannot read ({(exc.strerror or str(exc)).lower()})") from exc
    if len(data) > max_bytes:
        raise InputError(f"{what} {shown(path)}: larger than {max_bytes:,} bytes; is it the right file?")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {shown(path)}: not UTF-8 text (byte {exc.start})") from exc
