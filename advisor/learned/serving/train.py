"""Train the serving model from knowledge/serving_benchmarks.csv and write knowledge/serving_model.json.

Run:  python -m advisor.learned.serving.train   (needs scipy, installed with scikit-learn; deterministic:
fixed start, no random draws; a few minutes on one core, most of it the held-out folds)
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

from advisor.learned.serving.data import data_hash, load_cases
from advisor.learned.serving.evaluate import QUANTITIES, Row, held_out, quantile, scores
from advisor.learned.serving.fit import SEED, clipped_log_ratio, fit
from advisor.learned.serving.model import MODEL_NAME, ServingModel

OUT = Path(__file__).resolve().parents[3] / "knowledge" / MODEL_NAME


def _cv(rows: Sequence[Row]) -> dict[str, dict[str, float]]:
    out = {}
    for quantity in QUANTITIES:
        mine = [r for r in rows if r.obs.quantity == quantity and math.isfinite(r.baseline)]
        if mine:
            s = scores(mine)
            out[quantity] = {
                "rows": s.rows,
                "median": round(s.median, 4),
                "within_2x": round(s.within_2x, 4),
                "roofline_median": round(s.baseline_median, 4),
                "coverage": round(s.coverage, 4),
            }
    return out


def train() -> ServingModel:
    """Fit on every usable row; bands from leave-one-GPU-out residuals; both held-out splits in the meta."""
    cases, dropped = load_cases()
    model = fit(cases)
    by_gpu = held_out(cases, lambda c: c.gpu, model)
    by_engine = held_out(cases, lambda c: c.engine, model)
    interval = {}
    for quantity in QUANTITIES:
        res = [
            -clipped_log_ratio(r.obs.predicted, r.obs.measured) for r in by_gpu if r.obs.quantity == quantity
        ]
        if res:
            interval[quantity] = (round(quantile(res, 0.1), 4), round(quantile(res, 0.9), 4))
    meta = {
        "data": "knowledge/serving_benchmarks.csv",
        "data_sha256": data_hash(),
        "rows_used": len(cases),
        "rows_by_engine": dict(sorted(Counter(c.engine for c in cases).items())),
        "rows_left_out": dict(sorted(dropped.items())),
        "seed": SEED,
        "scipy": version("scipy"),
        "fit": "least squares on log(predicted / measured) of throughput, TTFT and TPOT, soft-L1, sources "
        "weighted 1/sqrt(rows), engine offsets centred and ridge-shrunk per term",
        "cv": {"leave-one-GPU-out": _cv(by_gpu), "leave-one-engine-out": _cv(by_engine)},
    }
    return ServingModel(model.params, model.engines, interval, meta)


def main() -> int:
    model = train()
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(model.to_json(), encoding="utf-8")
    tmp.replace(OUT)
    print(f"wrote {OUT.name}: {model.meta['rows_used']} rows; held out:")
    for split, figures in model.meta["cv"].items():
        for quantity, s in figures.items():
            print(f"  {split} {quantity}: {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
