"""Serving engines' scheduler and memory defaults (knowledge/serving_engines.toml), per GPU."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from advisor.catalog.common import shipped_root
from advisor.physics.batching import EngineLimits
from advisor.question.vocab import DEFAULT_ENGINE, ENGINES

ENGINES_FILE = "serving_engines.toml"
MIN_BUDGET = 2048
"""vLLM V0's smallest token budget without chunked prefill (vllm/config.py SchedulerConfig:
max(max_model_len, _DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048))."""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Engine:
    """One engine's defaults and where they come from."""

    id: str
    name: str
    source: str
    row_ref: str
    reserve: str
    memory_fraction: float
    fraction_of: str
    stand_in: str
    tiers: tuple[dict[str, Any], ...]
    supports: dict[str, Any] = field(default_factory=dict)
    """The layouts it runs: tp, pp, ep, disaggregation (and tp_power_of_two), with their source."""
    launch: dict[str, Any] = field(default_factory=dict)
    """The server command's template and the flags precisions and engine flags add."""
    profile: str = ""
    """'budget': the KV cache is what the memory fraction leaves after a profiled forward at the token
    budget (vLLM); '': after the fixed working set (the engine reserves a static pool)."""
    release_source: str = ""
    """Where the older releases' defaults (the `before_version` tiers) are read, when they have a source."""
    mla_absorbed_before: str = ""
    """Releases older than this keep MLA's absorbed decode weights beside the raw prefill weights (vLLM's
    V0 MLA backends); '' for none."""

    def absorbs_mla(self, version: str | None) -> bool:
        """Whether a measured row's release holds MLA's absorbed decode weights as well as the raw ones."""
        got, cutoff = release(version), release(self.mla_absorbed_before or None)
        return got is not None and cutoff is not None and got < cutoff

    def source_for(self, version: str | None) -> str:
        """The source of the defaults an answer for `version` uses: the older release's where that release
        predates the current defaults and its source is stated, else the current one."""
        return self.release_source if self.release_source and self.older(version) else self.source

    def older(self, version: str | None, *, legacy_only: bool = False) -> bool:
        """Whether a measured row's release is one of the older tiers' (any `before_version` tier; with
        legacy_only, only the tiers that do not say `legacy = false`)."""
        got = release(version) if version else None
        kept = [t for t in self.tiers if t.get("legacy", True) or not legacy_only]
        cutoffs = [release(str(t["before_version"])) for t in kept if "before_version" in t]
        return got is not None and any(c is not None and got < c for c in cutoffs)

    def legacy(self, version: str | None) -> bool:
        """Whether a measured row's release predates this engine's current defaults (an older tier's, unless
        the tier says `legacy = false`: its scheduler is simulated, its rows learn the current
        efficiencies)."""
        return self.older(version, legacy_only=True)

    def limits(
        self,
        gpu_id: str,
        memory_gb: float,
        version: str | None = None,
        vendor: str = "nvidia",
        mla: bool = False,
        max_model_len: int | None = None,
    ) -> EngineLimits:
        """The caps this engine sets on this GPU (the first tier whose conditions hold); `version` (a
        measured row's engine version) selects an older release's defaults, an answer's None the current.
        A tier whose budget is the served context (`context_budget`: vLLM V0 without chunked prefill
        schedules, and profiles, max(max_model_len, 2048) tokens) takes a stated `max_model_len`."""
        for tier in self.tiers:
            if _applies(tier, gpu_id, memory_gb) and _applies_to_release(tier, version, vendor, mla):
                budget = int(tier["token_budget"])
                if tier.get("context_budget") and max_model_len:
                    budget = max(int(max_model_len), MIN_BUDGET)
                return EngineLimits(
                    max_seqs=tier.get("max_seqs"),
                    token_budget=budget,
                    reserve=self.reserve,
                    memory_fraction=self.memory_fraction,
                    fraction_of=self.fraction_of,
                    chunked=bool(tier.get("chunked", True)),
                    wave=bool(tier.get("wave", False)),
                )
        raise ValueError(f"{ENGINES_FILE}: no tier of {self.id} applies to {gpu_id}")


def _applies(tier: dict[str, Any], gpu_id: str, memory_gb: float) -> bool:
    if memory_gb < tier.get("min_memory_gb", 0):
        return False
    if "ids" in tier and not any(gpu_id.startswith(p) for p in tier["ids"]):
        return False
    return not any(gpu_id.startswith(p) for p in tier.get("not_ids", ()))


@lru_cache(maxsize=64)
def release(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of an engine version as measured rows state it ('0.6.3.dev116 (ROCm 6.1)'), or None."""
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _applies_to_release(tier: dict[str, Any], version: str | None, vendor: str, mla: bool) -> bool:
    """A tier with `before_version` holds only for a stated older release (and the `vendor` and `mla`
    attention it names, if any)."""
    if "before_version" not in tier:
        return True
    if not version:  # an answer's current release: release() of it is None, so no older tier holds
        return False
    got, limit = release(version), release(tier["before_version"])
    if got is None or limit is None or got >= limit:
        return False
    return tier.get("vendor", vendor) == vendor and tier.get("mla", mla) == mla


@lru_cache(maxsize=1)
def engines() -> dict[str, Engine]:
    """Every engine of the vocabulary, read once."""
    from advisor.catalog.loader import cached_records

    # Through the knowledge cache: a warm run does not import the TOML parser.
    data = cached_records(shipped_root(), ENGINES_FILE, lambda raw: raw)
    out = {}
    for eid in ENGINES:
        d = data[eid]
        out[eid] = Engine(
            id=eid,
            name=d["name"],
            source=d["source"],
            row_ref=d["row_ref"],
            reserve=d["reserve"],
            memory_fraction=float(d["memory_fraction"]),
            fraction_of=d["fraction_of"],
            stand_in=d["stand_in"],
            tiers=tuple(d["tiers"]),
            supports=dict(d.get("supports", {})),
            launch=dict(d.get("launch", {})),
            profile=str(d.get("profile", "")),
            release_source=str(d.get("release_source", "")),
            mla_absorbed_before=str(d.get("mla_absorbed_before", "")),
        )
    return out


def runs(eng: Engine, tp: int, pp: int) -> bool:
    """Whether the engine can run a replica of tp x pp GPUs (TGI and LMDeploy have no pipeline stages;
    LMDeploy's tensor parallel size is a power of two)."""
    sup = eng.supports
    if pp > 1 and not sup.get("pp", False):
        return False
    if tp > 1 and not sup.get("tp", True):
        return False
    return not (sup.get("tp_power_of_two") and tp & (tp - 1))


def engine(eid: str | None) -> Engine:
    """One engine (the default engine when none is given)."""
    return engines()[eid or DEFAULT_ENGINE]
