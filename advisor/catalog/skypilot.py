"""Provides the one map between SkyPilot's accelerator names (knowledge/skypilot_accelerators.toml) and the
GPU catalogue: a name is a GPU's when it resolves through the catalogue's ids and aliases to that GPU."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from advisor.catalog.common import normalise_id, shipped_root
from advisor.catalog.loader import Knowledge, _read_toml
from advisor.question.errors import KnowledgeError

FILE = "skypilot_accelerators.toml"

# SkyPilot lists these PCIe cards under the SXM card's name (no catalogue has an A100-PCIE or H100-PCIE name:
# Lambda's gpu_1x_h100_pcie and gpu_1x_a100 rows carry H100 and A100); the instance type says which card.
SHARED_NAME = {"a100-40gb-pcie": "a100-40gb-sxm", "a100-80gb-pcie": "a100-80gb-sxm", "h100-pcie": "h100-sxm"}


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class SkyPilotNames:
    """SkyPilot's accelerator names, each with the clouds (lower case) whose catalogue lists it."""

    clouds: dict[str, frozenset[str]]
    source: str


@functools.lru_cache(maxsize=4)
def skypilot_names(knowledge: Knowledge) -> SkyPilotNames:
    """SkyPilot's names (a test knowledge base without the file reads the shipped one)."""
    try:
        raw = _read_toml(knowledge.root, FILE)
    except KnowledgeError:
        raw = _read_toml(shipped_root(), FILE)
    table = raw.get("accelerators")
    if not isinstance(table, dict) or not table:
        raise KnowledgeError(f"knowledge/{FILE}: no [accelerators] table")
    source = raw.get("sources", {}).get("skypilot-accelerators", {}).get("ref", "")
    clouds = {str(n): frozenset(str(c).lower() for c in cs) for n, cs in table.items()}
    return SkyPilotNames(clouds=clouds, source=source)


def gpu_of(knowledge: Knowledge, name: str) -> str | None:
    """The catalogue id a SkyPilot accelerator name resolves to: its id or an alias, as the catalogue looks
    names up; else the one id or alias it spells without separators (SkyPilot's RTXA5000 is the catalogue's
    'RTX A5000'), or None."""
    found = knowledge._gpu_index.get(normalise_id(name))
    if found is not None:
        return found.id
    ids = _compact_index(knowledge).get(normalise_id(name).replace("-", ""), set())
    return next(iter(ids)) if len(ids) == 1 else None


@functools.lru_cache(maxsize=4)
def _compact_index(knowledge: Knowledge) -> dict[str, set[str]]:
    """Every catalogue id and alias without separators, to the ids spelling it so."""
    index: dict[str, set[str]] = {}
    for gpu in knowledge.gpus:
        for key in (gpu.id, *gpu.aliases):
            index.setdefault(normalise_id(key).replace("-", ""), set()).add(gpu.id)
    return index


@functools.lru_cache(maxsize=64)
def _names_of(knowledge: Knowledge, gpu_id: str) -> tuple[str, ...]:
    """The SkyPilot names that resolve to a GPU, the most widely listed first (then by name)."""
    names = skypilot_names(knowledge).clouds
    mine = [n for n in names if gpu_of(knowledge, n) == gpu_id]
    return tuple(sorted(mine, key=lambda n: (-len(names[n]), n)))


def skypilot_name(knowledge: Knowledge, gpu_id: str, cloud: str | None = None) -> str | None:
    """The accelerator name a SkyPilot task gives this GPU, or None when SkyPilot's catalogue has none. On a
    cloud, a name that cloud lists (the one naming the exact part, e.g. RunPod's H100-SXM, before a shared
    one); otherwise the most widely listed. A PCIe card SkyPilot lists under the SXM card's name gets it."""
    mine = _names_of(knowledge, SHARED_NAME.get(gpu_id, gpu_id))
    if not mine:
        return None
    if cloud is not None:
        listed = [n for n in mine if cloud.lower() in skypilot_names(knowledge).clouds[n]]
        exact = [n for n in listed if normalise_id(n) == gpu_id]
        if exact or listed:
            return (exact or listed)[0]
    return mine[0]
