"""Provides Assumed: one value the advisor filled in for the user, with the input that would set it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class Assumed:
    """A default the answer rests on, said without any front end's words for the input.

    ``field`` is the input that would set it, as named in the input models ("seq_len", "stack", "spec");
    each front end names it its own way (the CLI its flag, the UI its label).
    """

    text: str
    """What was assumed: "sequence length 4096 tokens"."""
    note: str | None = None
    """Why, or where the figure comes from: "its loss path and runtime overhead"."""
    field: str | None = None

    def phrase(self, hint: str | None) -> str:
        """The assumption with the note and a front end's hint in brackets: 'X (note; hint)'."""
        extra = "; ".join(part for part in (self.note, hint) if part)
        return f"{self.text} ({extra})" if extra else self.text
