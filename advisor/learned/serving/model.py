"""The learned serving model: what the step model leaves to measurement, as plain parameters.

The step model (`advisor/physics/serving.py`) prices an iteration from bytes, FLOPs and all-reduces; this
model supplies its `Efficiency`: the achieved share of memory bandwidth and of peak compute (logistic in a
few traits), the scheduler's cost per iteration and per running sequence (log-linear), and a multiplier on the
all-reduce time. Traits: the engine (an offset per engine that has measured rows, shrunk toward the common
value), fp8 kernels, an AMD GPU (its software stack), and for a mixture of experts the width of one expert's
slice on a tensor-parallel rank (thin slices make inefficient grouped GEMMs: DeepSeek-V3's 2048-wide experts
over TP8 are 256 wide, Mixtral's 14336 over TP8 1792). No GPU id and no tensor-parallel degree is a trait:
the physics carries them. Parameters live in knowledge/serving_model.json; this module only evaluates them
(no numpy, no scipy).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from advisor.catalog.common import shipped_root
from advisor.learned.serving.engines import engines
from advisor.physics.serving import Efficiency

MODEL_NAME = "serving_model.json"
GLOBALS = (
    "memory",
    "memory_amd",
    "kv",
    "kv_amd",
    "experts",
    "experts_thin",
    "compute",
    "compute_amd",
    "compute_legacy",
    "step",
    "step_amd",
    "per_seq",
    "comm",
    "comm_amd",
    "sync",
    "request",
    "request_legacy",
    "layer",
)
ENGINE_TERMS = ("memory", "compute", "step", "request", "comm")
STEP_UNIT_S = 1e-3  # exp(0) of the iteration cost is one millisecond
PER_SEQ_UNIT_S = 1e-5  # exp(0) of the per-sequence cost is ten microseconds
REQUEST_UNIT_S = 1e-2  # exp(0) of the time outside the GPU before the first token is ten milliseconds
LAYER_UNIT_S = 1e-6  # exp(0) of the per-layer cost beyond the measured kernels is one microsecond
SYNC_UNIT_S = 5e-6  # exp(0) of the cost an all-reduce adds beyond its measured time is five microseconds
SHARE_MAX = 2.0
"""The most a kernel share may reach: an engine's kernels at twice the measured ones' speed (the roofline at
the datasheet's peak and bandwidth bounds every iteration anyway); 2 x logistic(0) = 1 is 'as measured'."""
FIELDS = (
    # (Efficiency field, link, unit, (parameter, trait) terms, the engine offset that moves it)
    ("memory", "logit", SHARE_MAX, (("memory", "one"), ("memory_amd", "amd")), "memory"),
    (
        "compute",
        "logit",
        SHARE_MAX,
        (("compute", "one"), ("compute_amd", "amd"), ("compute_legacy", "legacy")),
        "compute",
    ),
    ("kv", "logit", SHARE_MAX, (("kv", "one"), ("kv_amd", "amd")), None),
    ("experts", "logit", SHARE_MAX, (("experts", "one"), ("experts_thin", "thin")), None),
    ("step_s", "log", STEP_UNIT_S, (("step", "one"), ("step_amd", "amd")), "step"),
    ("per_seq_s", "log", PER_SEQ_UNIT_S, (("per_seq", "one"),), None),
    ("comm", "log", 1.0, (("comm", "one"), ("comm_amd", "amd")), "comm"),
    ("request_s", "log", REQUEST_UNIT_S, (("request", "one"), ("request_legacy", "legacy")), "request"),
    ("layer_s", "log", LAYER_UNIT_S, (("layer", "one"),), None),
    ("sync_s", "log", SYNC_UNIT_S, (("sync", "one"),), None),
)


@dataclass(frozen=True, slots=True, repr=False)
class Traits:
    """What the efficiencies depend on besides the physics."""

    engine: str
    fp8: bool
    amd: bool
    moe: bool
    expert_slice: float = 0.0
    """Width of one routed expert's FFN on one tensor-parallel rank (0: a dense model)."""
    legacy: bool = False
    """A measured row of a release older than the engine's current defaults (knowledge/serving_engines.toml
    `before_version` tiers: vLLM before 0.8, the V0 engine and its API server); an answer is for the current
    release."""


def logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ServingModel:
    """Global parameters, per-engine offsets, the held-out residual bands, and the fit's metadata."""

    params: dict[str, float]
    engines: dict[str, dict[str, float]]
    interval: dict[str, tuple[float, float]]  # quantity -> (q10, q90) of log(measured / predicted)
    meta: dict[str, Any]
    _efficiencies: dict[Traits, Efficiency] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """efficiency() by traits, worked out once: a search asks for every replica shape of every GPU, and most
    share their traits."""

    def source_engine(self, engine: str) -> str | None:
        """The engine whose offsets an engine uses: itself when measured, else its stand-in (and so on), else
        None (the engines' common values)."""
        seen, eid = set(), engine
        catalogue = engines()
        while eid and eid not in seen:
            if eid in self.engines:
                return eid
            seen.add(eid)
            eid = catalogue[eid].stand_in if eid in catalogue else ""
        return None

    def efficiency(self, t: Traits) -> Efficiency:
        """The step model's efficiencies for these traits."""
        eff = self._efficiencies.get(t)
        if eff is None:
            eff = self._efficiencies[t] = self.efficiency_and_slopes(t)[0]
        return eff

    def efficiency_and_slopes(self, t: Traits) -> tuple[Efficiency, dict[str, list[tuple[str, float]]]]:
        """The efficiencies, and for each field the parameters it moves with and d field / d parameter
        (engine offsets named 'engine/term'): what a fit's chain-rule Jacobian needs."""
        src = self.source_engine(t.engine)
        e = self.engines.get(src, {}) if src else {}
        feature = {
            "one": 1.0,
            "amd": float(t.amd),
            "fp8": float(t.fp8),
            "legacy": float(t.legacy),
            "thin": math.log2(1024.0 / min(1024.0, t.expert_slice)) if t.expert_slice > 0 else 0.0,
        }
        values: dict[str, float] = {}
        slopes: dict[str, list[tuple[str, float]]] = {}
        for name, link, unit, terms, engine_term in FIELDS:
            z = sum(self.params.get(p, 0.0) * feature[f] for p, f in terms) + (
                e.get(engine_term, 0.0) if engine_term else 0.0
            )
            if link == "logit":  # a share of at most `unit`
                share = logistic(z)
                v, dv = unit * share, unit * share * (1.0 - share)
            else:
                v = unit * math.exp(max(-30.0, min(30.0, z)))
                dv = v
            values[name] = v
            slopes[name] = [(p, dv * feature[f]) for p, f in terms if feature[f]]
            if engine_term and src:
                slopes[name].append((f"{src}/{engine_term}", dv))
        return Efficiency(**values), slopes

    def band(self, quantity: str) -> tuple[float, float]:
        """Multipliers (P10, P90) around a prediction of 'throughput', 'ttft' or 'tpot'."""
        q10, q90 = self.interval.get(quantity, (0.0, 0.0))
        return math.exp(q10), math.exp(q90)

    def to_json(self) -> str:
        data = {
            "params": self.params,
            "engines": self.engines,
            "interval": {k: list(v) for k, v in self.interval.items()},
            "meta": self.meta,
        }
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ServingModel:
        d = json.loads(text)
        return cls(
            params=d["params"],
            engines=d["engines"],
            interval={k: (v[0], v[1]) for k, v in d["interval"].items()},
            meta=d.get("meta", {}),
        )


def initial() -> ServingModel:
    """Starting values of a fit (and the pull every global is shrunk toward): every kernel as measured,
    1 ms of scheduler cost an iteration, 10 us a sequence, 1 us a layer, 4 ms before the first token."""
    params = dict.fromkeys(GLOBALS, 0.0)
    params["request"] = -1.0
    return ServingModel(params, {}, {}, {})


@lru_cache(maxsize=1)
def load_model() -> ServingModel | None:
    """The shipped model, or None when knowledge/serving_model.json is absent or from before this format."""
    res = shipped_root().joinpath(MODEL_NAME)
    if not res.is_file():
        return None
    text = res.read_text(encoding="utf-8")
    return ServingModel.from_json(text) if '"params"' in text else None
