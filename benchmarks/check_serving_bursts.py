"""Check the offline burst (every request sent at once) on the development sets' offline serving rows: each
row is built as a measured row (advisor/learned/serving/data.py) and its median TTFT predicted by the shipped
serving model as a burst of its `num_prompts`, beside the published figure. A check that the mechanism
generalises across sources, not a fit (nothing is learned from these rows). `predict` has no input for a
burst's size, so bench_heldout.py still asks these rows at `--requests-per-s inf`.

Run: .venv/bin/python benchmarks/check_serving_bursts.py   (seconds; the development sets only: heldout5 is
sealed and never read)
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from advisor.catalog import load_knowledge
from advisor.learned.serving.data import _case
from advisor.learned.serving.model import load_model
from advisor.learned.serving.observe import burst, observe_model

HERE = Path(__file__).resolve().parent
DEVELOPMENT = ("heldout", "heldout2", "heldout3", "heldout4")
STAT = {"median": "p50", "mean": "mean", "p90": "p90", "p99": "p99"}


def _as_measured(r: dict[str, str]) -> dict[str, str]:
    """A development row in knowledge/serving_benchmarks.csv's columns (an offline run of num_prompts)."""
    row = {**r, "kind": "offline", "requests": r.get("num_prompts", "")}
    for name in ("ttft", "tpot"):
        row[f"{name}_pctl"] = STAT.get((r.get(f"{name}_stat") or "").split(" ")[0].lower(), "p50")
        row[f"{name}_p99_ms"] = ""
    row.update(itl_ms="", itl_pctl="", itl_p99_ms="")
    return row


def main() -> None:
    knowledge, model = load_knowledge(), load_model()
    assert model is not None
    ratios = []
    for runs in DEVELOPMENT:
        for r in csv.DictReader((HERE / f"{runs}_serving_runs.csv").open(encoding="utf-8")):
            if r["loop"] != "offline" or not r.get("ttft_ms") or not r.get("tp"):
                continue
            c = _case(knowledge, _as_measured(r))
            if isinstance(c, str) or not burst(c):
                print(f"{runs:9} {r['id']:28} left out: {c if isinstance(c, str) else 'no request count'}")
                continue
            for o in observe_model(model, c):
                if o.quantity == "ttft":
                    ratios.append(o.predicted / o.measured)
                    print(
                        f"{runs:9} {r['id']:28} {c.requests:5d} requests, {o.stat}: TTFT"
                        f" {o.predicted * 1e3:9.0f} ms, published {o.measured * 1e3:9.0f} ms"
                        f" ({ratios[-1]:.2f}x)"
                    )
    if ratios:
        errors = [abs(x - 1) for x in ratios]
        print(f"median error {statistics.median(errors):.1%} over {len(ratios)} bursts")


if __name__ == "__main__":
    main()
