"""Train the serving model from knowledge/serving_benchmarks.csv and write knowledge/serving_model.json.

Run:  python -m advisor.learned.serving.train   (needs scipy, installed with scikit-learn; deterministic)
"""

from __future__ import annotations

import math
import sys
from importlib.metadata import version
from pathlib import Path

from advisor.learned.serving.data import data_hash, load_cases
from advisor.learned.serving.evaluate import evaluation_rows, log_residuals, quantile
from advisor.learned.serving.fit import SEED, fit, predicted, usable
from advisor.learned.serving.model import MODEL_NAME, ServingModel

OUT = Path(__file__).resolve().parents[3] / "knowledge" / MODEL_NAME


def cv_interval(cases: list, key) -> dict[str, tuple[float, float]]:
    """P10/P90 of log(measured/predicted) on leave-one-GPU-out predictions, per quantity."""
    res: dict[str, list[float]] = {"throughput": [], "ttft": []}
    rows = usable(cases)
    for group in sorted({key(c) for c in rows}):
        model = fit([c for c in rows if key(c) != group])
        for c in (c for c in rows if key(c) == group):
            p, m = predicted(model, c)
            res["ttft" if c.kind == "ttft-bs1" else "throughput"].append(math.log(m / p) if p > 0 else 10.0)
    return {k: (round(quantile(v, 0.1), 4), round(quantile(v, 0.9), 4)) for k, v in res.items() if v}


def train() -> ServingModel:
    cases, dropped = load_cases()
    model = fit(cases)
    rows = usable(cases)
    res = log_residuals(model, rows)
    cv = {
        f"{split} / {name}": {
            "rows": s.rows,
            "median": round(s.median, 4),
            "p90": round(s.p90, 4),
            "within_2x": round(s.within_2x, 4),
            "coverage": round(s.coverage or 0, 4),
        }
        for split, name, s in evaluation_rows(cases)
    }
    meta = {
        "data": "knowledge/serving_benchmarks.csv",
        "data_sha256": data_hash(),
        "rows_used": len(rows),
        "rows_left_out": dict(sorted(dropped.items())),
        "engines": sorted({c.engine for c in rows}),
        "seed": SEED,
        "scipy": version("scipy"),
        "fit": "least squares on log(pred/measured), soft-L1",
        "train_median_abs_log_error": round(sorted(abs(r) for r in res)[len(res) // 2], 4),
        "cv": cv,
    }
    return ServingModel(model.prefill, model.decode, model.engines, cv_interval(cases, lambda c: c.gpu), meta)


def main() -> int:
    model = train()
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(model.to_json(), encoding="utf-8")
    tmp.replace(OUT)
    print(f"wrote {OUT.name}: {model.meta['rows_used']} rows; CV:")
    for k, v in model.meta["cv"].items():
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
