"""Provides the exported gradient-boosted trees: plain parameters (JSON) and a pure-Python evaluator.

Prediction must not import scikit-learn (2 s) nor numpy (0.2 s): a hundred shallow trees walked in
Python cost about 50 microseconds per plan.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.learned.efficiency.bounds import Bounds
from advisor.learned.efficiency.linear import LinearLogModel

FORMAT = "gpu-advisor-gbdt-v1"


MAX_LOG_TERM = 50.0
"""Largest |log efficiency| a stored baseline or leaf may hold."""


@dataclass(frozen=True, slots=True, repr=False)
class Tree:
    """One regression tree as parallel node arrays (feature, threshold, left, right, value, leaf)."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]
    leaf: tuple[bool, ...]

    def predict(self, x: Sequence[float]) -> float:
        """The leaf value x falls into (x[f] <= threshold goes left, as scikit-learn's predictors do)."""
        node = 0
        leaf, feature, threshold, left, right = self.leaf, self.feature, self.threshold, self.left, self.right
        while not leaf[node]:
            node = left[node] if x[feature[node]] <= threshold[node] else right[node]
        return self.value[node]


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ExportedModel:
    """A fitted log-efficiency model: baseline + trees, its interval, and the range of its training data."""

    features: tuple[str, ...]
    baseline: float
    trees: tuple[Tree, ...]
    interval: dict[str, tuple[float, float]]
    """Log-residual P10 and P90 of held-out-GPU predictions, per family ('llm', 'other')."""
    feature_min: tuple[float, ...]
    feature_max: tuple[float, ...]
    rows: int
    meta: dict[str, Any]
    linear: LinearLogModel | None = None
    """The LLM model (advisor/learned/efficiency/linear.py), when training chose it for LLM runs of LLM
    stacks."""
    bounds: Bounds | None = None
    """Caps per GPU generation and precision, the constant-MFU prior and the measured range
    (advisor/learned/efficiency/bounds.py)."""
    _nested: tuple[Any, ...] = field(init=False, repr=False, compare=False)
    """The trees as nested tuples (made from `trees`)."""

    def __post_init__(self) -> None:
        # Nested (feature, threshold, left, right) tuples walk about 1.5x faster than the node arrays.
        object.__setattr__(self, "_nested", tuple(_nest(t, 0) for t in self.trees))

    def predict_log(self, x: Sequence[float]) -> float:
        """Predicted log efficiency."""
        total = self.baseline
        for node in self._nested:
            while node.__class__ is tuple:
                feature, threshold, left, right = node  # one unpacking: a fifth faster than two lookups
                node = left if x[feature] <= threshold else right
            total += node
        return total

    def outside(self, x: Sequence[float]) -> list[str]:
        """Features of x beyond the range the model was trained on (predictions there are extrapolations)."""
        return [
            name
            for name, v, lo, hi in zip(self.features, x, self.feature_min, self.feature_max, strict=True)
            if v < lo - 1e-9 or v > hi + 1e-9
        ]

    def to_json(self) -> str:
        """The artifact text (deterministic: same model, same bytes)."""
        data = {
            "format": FORMAT,
            "target": "log(measured / speed of light)",
            "features": list(self.features),
            "baseline": self.baseline,
            "interval": {k: list(v) for k, v in sorted(self.interval.items())},
            "feature_min": list(self.feature_min),
            "feature_max": list(self.feature_max),
            "rows": self.rows,
            "meta": self.meta,
            **({"llm_linear": self.linear.to_dict()} if self.linear is not None else {}),
            **({"bounds": self.bounds.to_dict()} if self.bounds is not None else {}),
            "trees": [
                {
                    "feature": list(t.feature),
                    "threshold": list(t.threshold),
                    "left": list(t.left),
                    "right": list(t.right),
                    "value": list(t.value),
                    "leaf": [int(v) for v in t.leaf],
                }
                for t in self.trees
            ],
        }
        return json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ExportedModel:
        """Parse an artifact; ValueError when it is not one."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} artifact")
        trees = tuple(
            Tree(
                tuple(t["feature"]),
                tuple(float(v) for v in t["threshold"]),
                tuple(t["left"]),
                tuple(t["right"]),
                tuple(float(v) for v in t["value"]),
                tuple(bool(v) for v in t["leaf"]),
            )
            for t in data["trees"]
        )
        interval = {k: (float(v[0]), float(v[1])) for k, v in data["interval"].items()}
        linear = LinearLogModel.from_dict(data["llm_linear"]) if "llm_linear" in data else None
        bounds = Bounds.from_dict(data["bounds"]) if "bounds" in data else None
        return cls(
            tuple(data["features"]),
            float(data["baseline"]),
            trees,
            interval,
            tuple(data["feature_min"]),
            tuple(data["feature_max"]),
            int(data["rows"]),
            data.get("meta", {}),
            linear,
            bounds,
        )


def check_exported(model: ExportedModel, features: Sequence[str]) -> ExportedModel:
    """model when it is whole and finite for these features; ValueError naming what is wrong otherwise.

    A stored model is walked node by node at every prediction: a wrong index, a cycle or a NaN there
    would crash (or silently corrupt) every later answer, so it is refused at load instead.
    """
    if tuple(model.features) != tuple(features):
        raise ValueError(
            f"features {list(model.features)[:3]}...: expected the {len(features)} of this version"
        )
    n = len(features)
    numbers = [model.baseline, *model.feature_min, *model.feature_max]
    numbers += [q for pair in model.interval.values() for q in pair]
    if len(model.feature_min) != n or len(model.feature_max) != n or "all" not in model.interval:
        raise ValueError("feature range or interval of the wrong shape")
    if not all(math.isfinite(v) for v in numbers) or model.rows < 0 or not isinstance(model.meta, dict):
        raise ValueError("a baseline, range or interval that is not a finite number")
    # Log-efficiency terms: e**50 is past any ratio to the speed of light; a stored 1e308 would overflow every
    # prediction instead of being refused here.
    if abs(model.baseline) > MAX_LOG_TERM:
        raise ValueError(f"baseline {model.baseline:g} is not a log efficiency (|x| <= {MAX_LOG_TERM:g})")
    calibrated = model.meta.get("calibration_rows", 0)
    if isinstance(calibrated, bool) or not isinstance(calibrated, int) or calibrated < 0:
        raise ValueError(f"meta.calibration_rows {calibrated!r} is not a count")
    for k, tree in enumerate(model.trees):
        _check_tree(tree, n, k)
    return model


def _check_tree(tree: Tree, n_features: int, k: int) -> None:
    size = len(tree.leaf)
    arrays = (tree.feature, tree.threshold, tree.left, tree.right, tree.value)
    if size == 0 or any(len(a) != size for a in arrays):
        raise ValueError(f"tree {k}: node arrays of different lengths")
    for i in range(size):
        if tree.leaf[i]:
            if not math.isfinite(tree.value[i]) or abs(tree.value[i]) > MAX_LOG_TERM:
                raise ValueError(f"tree {k} node {i}: leaf value {tree.value[i]!r} is not a log efficiency")
            continue
        # Children after their parent (scikit-learn's order) rules out cycles and out-of-range jumps.
        if not (
            0 <= tree.feature[i] < n_features
            and i < tree.left[i] < size
            and i < tree.right[i] < size
            and math.isfinite(tree.threshold[i])
        ):
            raise ValueError(f"tree {k} node {i}: feature, child index or threshold out of range")


def _nest(tree: Tree, node: int) -> Any:
    if tree.leaf[node]:
        return tree.value[node]
    return (
        tree.feature[node],
        tree.threshold[node],
        _nest(tree, tree.left[node]),
        _nest(tree, tree.right[node]),
    )
