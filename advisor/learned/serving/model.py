"""The learned serving model: prefill and decode efficiencies against speed of light, as plain parameters.

efficiency = logistic(z), z linear in a few physical features (precision class, tensor-parallel degree, prompt
length, MoE, context) plus an engine offset; no GPU id is a feature. Parameters live in
knowledge/serving_model.json; numbers here only evaluate them (no scikit-learn, no scipy).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import Any

from advisor.physics.serving import Hardware, Shape, batch_capacity, offline_output_tok_s, prefill_s

MODEL_NAME = "serving_model.json"
DEFAULT_ENGINE = "trtllm"
PREFILL_FEATURES = ("intercept", "fp16", "log2_tp", "log_isl")
DECODE_FEATURES = ("intercept", "fp16", "log2_tp", "moe", "log_context")


@dataclass(frozen=True, slots=True)
class Config:
    """One serving configuration the efficiencies are asked for."""

    engine: str
    precision: str
    tp: int
    isl: int
    osl: int
    moe: bool


def features(cfg: Config, regime: str) -> dict[str, float]:
    """The named features of one regime ('prefill' or 'decode')."""
    common = {
        "intercept": 1.0,
        "fp16": 1.0 if cfg.precision in ("fp16", "bf16") else 0.0,
        "log2_tp": math.log2(max(cfg.tp, 1)),
    }
    if regime == "prefill":
        return common | {"log_isl": math.log(cfg.isl / 1000.0)}
    return common | {"moe": 1.0 if cfg.moe else 0.0, "log_context": math.log((cfg.isl + cfg.osl) / 1000.0)}


def logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass(frozen=True)
class ServingModel:
    """Parameters of both regimes, the engines seen in training, and the CV residual interval."""

    prefill: dict[str, float]
    decode: dict[str, float]
    engines: dict[str, dict[str, float]]  # engine -> {"prefill": offset, "decode": offset}
    interval: dict[str, tuple[float, float]]  # quantity -> (q10, q90) of log(measured / predicted)
    meta: dict[str, Any]  # JSON metadata: rows used, engines, CV figures

    def knows(self, engine: str) -> bool:
        return engine in self.engines

    def efficiency(self, cfg: Config, regime: str) -> float:
        """P50 efficiency of a regime; an engine with no measured rows uses the default engine's offset."""
        params = self.prefill if regime == "prefill" else self.decode
        z = sum(params.get(k, 0.0) * v for k, v in features(cfg, regime).items())
        engine = self.engines.get(cfg.engine) or self.engines.get(DEFAULT_ENGINE, {})
        return logistic(z + engine.get(regime, 0.0))

    def band(self, quantity: str) -> tuple[float, float]:
        """Multipliers (P10, P90) around a P50 prediction of 'throughput' or 'ttft'."""
        q10, q90 = self.interval.get(quantity, (0.0, 0.0))
        return math.exp(q10), math.exp(q90)

    def max_output_tok_s(self, cfg: Config, shape: Shape, hw: Hardware) -> float:
        """Offline maximum output tokens/s of one replica (KV cache full, or the batch cap)."""
        batch = batch_capacity(shape, hw, cfg.precision, cfg.isl, cfg.osl)
        if batch < 1:
            return 0.0
        return offline_output_tok_s(
            shape,
            hw,
            cfg.precision,
            cfg.isl,
            cfg.osl,
            batch,
            self.efficiency(cfg, "prefill"),
            self.efficiency(cfg, "decode"),
        )

    def ttft_alone_s(self, cfg: Config, shape: Shape, hw: Hardware) -> float:
        """Time to first token of one request on an idle replica."""
        return prefill_s(shape, hw, cfg.isl) / self.efficiency(cfg, "prefill")

    def to_json(self) -> str:
        data = {
            "prefill": self.prefill,
            "decode": self.decode,
            "engines": self.engines,
            "interval": {k: list(v) for k, v in self.interval.items()},
            "meta": self.meta,
        }
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ServingModel:
        d = json.loads(text)
        return cls(
            prefill=d["prefill"],
            decode=d["decode"],
            engines=d["engines"],
            interval={k: (v[0], v[1]) for k, v in d["interval"].items()},
            meta=d.get("meta", {}),
        )


@lru_cache(maxsize=1)
def load_model() -> ServingModel | None:
    """The shipped model, or None when knowledge/serving_model.json is absent."""
    res = files("knowledge").joinpath(MODEL_NAME)
    if not res.is_file():
        return None
    return ServingModel.from_json(res.read_text(encoding="utf-8"))
