"""Provides assumed_text(): an assumption or note in the CLI's words, naming the flag that would change it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.question.fields import flag_of

if TYPE_CHECKING:  # the catalogue commands import this module and must not import pydantic
    from advisor.question.assumed import Assumed

# How the CLI says which input would change a note, where a flag alone does not say it.
ASSUMED_HINT = {
    "kind": "pass --workload",
    "spec": "give --config or --layers ... for the real shape",
    "max_price_age_months": "--max-price-age to change; `gpu-advisor prices update` to refresh",
}


def assumed_text(a: Assumed) -> str:
    """An assumption in the CLI's words: 'sequence length 4096 tokens (pass --seq-len)'."""
    hint = None
    if a.field:
        hint = ASSUMED_HINT.get(a.field, f"pass {flag_of(a.field)}")
    return a.phrase(hint)
