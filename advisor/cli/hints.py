"""Provides assumed_text(): an assumption in the CLI's words, naming the flag that would replace it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the catalogue commands import this module and must not import pydantic
    from advisor.question.assumed import Assumed

# How the CLI says which input would replace an assumption (its flag; a model shape takes several).
ASSUMED_HINT = {"kind": "pass --workload", "spec": "give --config or --layers ... for the real shape"}


def assumed_text(a: Assumed) -> str:
    """An assumption in the CLI's words: 'sequence length 4096 tokens (pass --seq-len)'."""
    hint = None
    if a.field:
        hint = ASSUMED_HINT.get(a.field, f"pass --{a.field.replace('_', '-')}")
    return a.phrase(hint)
