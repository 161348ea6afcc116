"""Provides hosted API prices per model (knowledge/hosted_api_prices.toml), each row sourced and dated."""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any, Literal, cast

from advisor.catalog.common import Source, shipped_root
from advisor.catalog.loader import Knowledge, cached_records, validate
from advisor.question.errors import KnowledgeError

FILE = "hosted_api_prices.toml"


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ApiPrice:
    """One host's list price for one model, USD per million input and output tokens."""

    model: str
    provider: str
    api_model: str
    usd_per_m_input: float
    usd_per_m_output: float
    source: str
    url: str = ""
    deprecated: dt.date | None = None
    """The date the host retires the model (None: none stated)."""

    def per_m_output(self, prompt_tokens: int, output_tokens: int) -> float:
        """USD per million output tokens, counting each request's prompt tokens at the input price."""
        return self.usd_per_m_output + self.usd_per_m_input * prompt_tokens / max(1, output_tokens)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class HostedFile:
    """All of hosted_api_prices.toml."""

    schema_version: Literal[1]
    sources: dict[str, Source]
    api: tuple[ApiPrice, ...]


@functools.lru_cache(maxsize=4)
def load_hosted(knowledge: Knowledge) -> HostedFile:
    """The hosted API prices (a test knowledge base without the file reads the shipped one), validated on a
    cache miss."""
    root = knowledge.root if knowledge.root.joinpath(FILE).is_file() else shipped_root()
    return cast(HostedFile, cached_records(root, FILE, _hosted))


def _hosted(raw: dict[str, Any]) -> HostedFile:
    data: HostedFile = validate(HostedFile, raw, FILE)
    unknown = {a.source for a in data.api} - set(data.sources)
    if unknown:
        raise KnowledgeError(f"knowledge/{FILE}: unknown source key(s) {', '.join(sorted(unknown))}")
    return data


def api_prices(knowledge: Knowledge, model_id: str, on: dt.date) -> list[ApiPrice]:
    """The hosts' current prices for a model (rows retired before `on` left out), cheapest output first."""
    rows = [a for a in load_hosted(knowledge).api if a.model == model_id]
    live = [a for a in rows if a.deprecated is None or a.deprecated >= on]
    return sorted(live, key=lambda a: (a.usd_per_m_output, a.usd_per_m_input, a.provider))
