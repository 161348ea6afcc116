"""Provides what each provider documents about capacity and about the network between separate instances
(knowledge/capacity.toml): the link of an offer's instances and the capacity of a provider."""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from advisor.catalog.assumptions import Fabric
from advisor.catalog.common import Source, shipped_root
from advisor.catalog.loader import Knowledge, cached_records, validate
from advisor.catalog.prices import Offer
from advisor.question.errors import KnowledgeError

FILE = "capacity.toml"
TCP_LATENCY_S = 8e-6
"""The per-step latency the catalogue's fabrics use (knowledge/assumptions.toml: a floor; no stored source
gives NCCL's inter-node step latency)."""


@dataclass(frozen=True, slots=True, repr=False)
class Link:
    """How separate instances of one type connect, as the provider documents it."""

    provider: str
    match: str
    rdma: bool
    name: str
    source: str
    gbps: float | None = None
    per: Literal["gpu", "node"] = "node"
    note: str = ""
    documented: bool = True
    """False: nothing is stored about how this provider's instances connect (see undocumented())."""

    @property
    def key(self) -> str:
        """Which search a plan on this link belongs to."""
        return f"{self.provider}:{self.match}" if self.documented else f"{self.provider}:?"

    def fabric(self) -> Fabric | None:
        """The documented bandwidth as a fabric the step model times, or None where none is stored."""
        if self.gbps is None:
            return None
        return Fabric(
            name=self.name, gbps=self.gbps, per=self.per, latency_s=TCP_LATENCY_S, source=self.source
        )


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ProviderCapacity:
    """What a provider documents about renting many instances at once."""

    id: str
    on_demand: str
    source: str
    reservation: str = ""
    reservation_gpus: tuple[str, ...] = ()
    """The GPUs the reservation offers (empty: any the provider rents)."""
    reservation_min_gpus: int | None = None
    reservation_max_gpus: int | None = None
    reservation_max_instances: int | None = None
    reservation_min_days: float | None = None
    reservation_max_days: float | None = None
    reservation_fabric: str = ""
    term_source: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class CapacityFile:
    """All of capacity.toml."""

    schema_version: Literal[1]
    sources: dict[str, Source]
    instance: tuple[Link, ...] = ()
    provider: tuple[ProviderCapacity, ...] = ()
    missing: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def load_capacity(knowledge: Knowledge) -> CapacityFile:
    """The capacity facts of a knowledge base (a test knowledge base without the file reads the shipped one),
    validated on a cache miss, every source key checked."""
    root = knowledge.root if knowledge.root.joinpath(FILE).is_file() else shipped_root()
    return cast(CapacityFile, cached_records(root, FILE, _capacity))


def _capacity(raw: dict[str, Any]) -> CapacityFile:
    data: CapacityFile = validate(CapacityFile, raw, FILE)
    used = {x.source for x in data.instance} | {p.source for p in data.provider}
    used |= {p.term_source for p in data.provider if p.term_source}
    unknown = used - set(data.sources)
    if unknown:
        raise KnowledgeError(f"knowledge/{FILE}: unknown source key(s) {', '.join(sorted(unknown))}")
    return data


def link_of(knowledge: Knowledge, offer: Offer) -> Link | None:
    """The documented link between separate instances of an offer's type (None: not documented)."""
    return link_for(knowledge, offer.provider, offer.instance)


def link_for(knowledge: Knowledge, provider: str, instance: str) -> Link | None:
    """The documented link between separate instances of a provider's instance type (None: not documented)."""
    for row in load_capacity(knowledge).instance:
        if row.provider == provider and fnmatch.fnmatchcase(instance, row.match):
            return row
    return None


def undocumented(provider: str) -> Link:
    """The link of instances nothing stored describes: timed on ordinary Ethernet, with no model parallelism
    across instances (an RDMA fabric is not known to be there; the answer says to state it if there is)."""
    return Link(provider, "*", False, "no documented link", "", documented=False)


def provider_capacity(knowledge: Knowledge, provider: str) -> ProviderCapacity | None:
    """What a provider documents about capacity (None: nothing stored)."""
    return next((p for p in load_capacity(knowledge).provider if p.id == provider), None)


def source_ref(knowledge: Knowledge, key: str) -> str:
    """Where a capacity fact comes from, for the answer to cite: its address (or reference) and date; the
    full title and reference are in knowledge/capacity.toml under the key."""
    src = load_capacity(knowledge).sources.get(key)
    if src is None:
        return key
    when = f", {src.date.isoformat()}" if src.date else ""
    return f"{src.url or src.ref}{when}"
