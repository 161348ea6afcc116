"""Print the serving model's held-out accuracy: output throughput, TTFT and TPOT held out by engine, by GPU
and by source, against a roofline baseline, separately for closed-loop, open-loop and offline rows; issue
28's goals and its DeepSeek-R1 check; and issue 17's 8x H200 / 8x H100 check.

Run: .venv/bin/python benchmarks/bench_serving.py   (refits per fold: minutes on one core)
"""

from __future__ import annotations

from advisor.cli.evaluate_out import ratio_line
from advisor.learned.serving.evaluate import evaluation_report

if __name__ == "__main__":
    print(evaluation_report())
    print(ratio_line())
