"""Provides the error types the core raises and the CLI maps to exit codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class AdvisorError(Exception):
    """Base class of the errors gpu-advisor reports without a traceback."""


class InputError(AdvisorError, ValueError):
    """A value the user gave is not accepted (CLI exit 2).

    The message is one line that names the bad value and what is accepted. Raisers that know which input
    was wrong also give it as fields, so each front end can name the input in its own words (the CLI its
    flag, the UI the field's label) without reading the message:

    - ``field``: the input's name as in the question's records ("seq_len", "budget_usd", "deadline_hours");
    - ``value``: what the user gave; ``problem``: what is wrong with it ("is not a number");
    - ``accepted``: what would be accepted ("a whole number of tokens, e.g. 4096").

    ``InputError(message)`` alone still works; the fields are then None.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        field: str | None = None,
        value: Any = None,
        problem: str | None = None,
        accepted: str | None = None,
    ) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        self.accepted = accepted
        super().__init__(message if message is not None else self.phrase(field or "input"))

    @property
    def structured(self) -> bool:
        """Whether the raiser said which input and what is wrong with it."""
        return self.field is not None and self.problem is not None

    def detail(self) -> str:
        """What is wrong and what is accepted, without naming the input: "'lots' is not a number; use ..."."""
        if self.problem is None:
            return str(self)
        value = self.value
        given = "" if value is None else f"{value:g} " if isinstance(value, float) else f"{value!r} "
        accepted = f"; {self.accepted}" if self.accepted else ""
        return f"{given}{self.problem}{accepted}"

    def phrase(self, name: str | Callable[[str], str]) -> str:
        """One line naming the input in the caller's words: a name, or a function from field to name."""
        if callable(name):
            name = name(self.field or "")
        return f"{name}: {self.detail()}" if name else self.detail()


class KnowledgeError(AdvisorError):
    """A knowledge file is malformed: the message names the file and the field."""
