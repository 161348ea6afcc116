"""Provides storage prices per provider ($/GB-month, block and object, each sourced) from
knowledge/storage.toml."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from advisor.catalog.common import PosFloat, Source
from advisor.catalog.loader import Knowledge, cached_records, validate
from advisor.question.errors import InputError, KnowledgeError

StorageKind = Literal["block", "object"]


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class StoragePrice:
    """One storage product's list price."""

    provider: str
    kind: StorageKind
    name: str
    usd_per_gb_month: PosFloat
    source: str
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class StorageFile:
    """All of storage.toml."""

    schema_version: Literal[1]
    sources: dict[str, Source]
    storage: tuple[StoragePrice, ...]
    missing: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def load_storage(knowledge: Knowledge) -> StorageFile:
    """The storage prices of a knowledge base (read on first use, validated on a cache miss), every source
    key checked."""
    return cast(StorageFile, cached_records(knowledge.root, "storage.toml", _storage))


def _storage(raw: dict[str, Any]) -> StorageFile:
    data: StorageFile = validate(StorageFile, raw, "storage.toml")
    unknown = {s.source for s in data.storage} - set(data.sources)
    if unknown:
        raise KnowledgeError(f"knowledge/storage.toml: unknown source key(s) {', '.join(sorted(unknown))}")
    return data


def storage_price(knowledge: Knowledge, provider: str, kind: StorageKind) -> StoragePrice:
    """The price of one provider's block or object storage; InputError names the providers that have one."""
    data = load_storage(knowledge)
    for s in data.storage:
        if s.provider == provider.lower() and s.kind == kind:
            return s
    have = sorted({s.provider for s in data.storage if s.kind == kind})
    why = data.missing.get(provider.lower(), "not in knowledge/storage.toml")
    raise InputError(
        field="provider",
        value=provider,
        problem=f"has no sourced {kind} storage price ({why})",
        accepted=", ".join(have),
    )


def storage_cost(price: StoragePrice, gb: float, hours: float, hours_per_month: float = 730.0) -> float:
    """Cost of holding `gb` for `hours` (billed per GB-month, pro rata)."""
    return price.usd_per_gb_month * gb * hours / hours_per_month
