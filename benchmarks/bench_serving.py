"""Print the serving model's held-out accuracy (leave-one-engine-out, leave-one-GPU-out; throughput, TTFT and
TPOT against a roofline baseline; coverage per engine) and issue 17's 8x H200 / 8x H100 check.

Run: .venv/bin/python benchmarks/bench_serving.py   (refits per fold: minutes on one core)
"""

from __future__ import annotations

from advisor.cli.evaluate_out import ratio_line
from advisor.learned.serving.evaluate import evaluation_report

if __name__ == "__main__":
    print(evaluation_report())
    print(ratio_line())
