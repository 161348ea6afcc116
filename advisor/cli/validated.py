"""Provides validated(): an input model built from the CLI's values, its first problem as one InputError."""

from __future__ import annotations

from typing import Any

from advisor.question.errors import InputError
from advisor.question.fields import flag_of


def validated(cls: Any, data: dict[str, Any]) -> Any:
    """The model, or the InputError of its first problem: the core's own (structured, the CLI names the
    flag), or pydantic's, named by the field it is about."""
    from advisor.job.door import question, validation_errors  # a catalogue command builds no question

    try:
        return question(cls, data)
    except ValueError as exc:
        errors = validation_errors(exc)
        if errors is None:
            raise
        err = errors[0]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, InputError):
            raise cause from None
        loc = [str(x) for x in err["loc"]]
        field = loc[1] if len(loc) > 1 and loc[0] in ("config", "spec") else (loc[0] if loc else "")
        got = f" (got {err['input']!r})" if field and not isinstance(err["input"], dict) else ""
        msg = err["msg"].removeprefix("Value error, ")
        raise InputError(f"{flag_of(field)}: {msg}{got}" if field else msg) from exc
