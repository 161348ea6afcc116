"""Provides the calibration's priors: how far a user's cluster may move each part of the step (or each
serving efficiency) before any run is seen, fitted on the published runs by
`python benchmarks/bench_calibration.py --refit` and shipped as knowledge/calibration_priors.json (its
provenance inside it); the defaults here where that file is absent or lacks a figure."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

FILE = "calibration_priors.json"
# The shape of the file, and what each figure falls back to. Training: the prior spread of the log factor on
# the step's compute time (what the GPUs and kernels of the user's cluster do), on its exposed communication
# and bubble traffic (the fabric), of a per-step overhead in seconds, and of what one configuration adds on
# its own (spread, correlated over `length` units of the configuration distance). Serving residuals after the
# efficiencies moved: tau is what every result of a deployment shares. Serving knobs: the prior spread of
# each efficiency multiplier (advisor/learned/calibration/serving.py).
DEFAULTS: dict[str, dict[str, float]] = {
    "training": {"compute": 0.2, "comm": 0.5, "overhead_s": 0.01, "spread": 0.4, "length": 1.0},
    "throughput": {"tau": 0.05, "spread": 0.3, "length": 0.5},
    "ttft": {"tau": 0.5, "spread": 0.8, "length": 0.25},
    "tpot": {"tau": 0.05, "spread": 0.3, "length": 0.5},
    "serving_knobs": {"memory": 0.3, "prefill": 0.8, "overhead": 1.0, "request": 1.0},
}


@lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    from advisor.catalog.common import shipped_root

    path = shipped_root().joinpath(FILE)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def prior(group: str) -> dict[str, float]:
    """The priors of one group (training, throughput, ttft, tpot, serving_knobs): the shipped fit over the
    defaults."""
    got = _shipped().get(group, {})
    out = dict(DEFAULTS[group])
    out.update({k: float(v) for k, v in got.items() if k in out and isinstance(v, (int, float)) and v > 0})
    return out


def provenance() -> dict[str, Any]:
    """What the shipped priors were fitted on (their `meta`), empty without the file."""
    meta = _shipped().get("meta", {})
    return meta if isinstance(meta, dict) else {}
