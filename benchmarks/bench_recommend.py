"""Times `recommend` over the catalogue: in-process after load, and as a whole process (prints figures)."""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from advisor.answer.recommend import recommend
from advisor.catalog import load_knowledge
from advisor.job.inputs import Constraints, Workload
from advisor.learned.efficiency.select import efficiency_model

CASES = [
    (
        "llama-2-70b finetune, $20k",
        Workload(model="llama-2-70b", kind="finetune", precision="bf16"),
        Constraints(budget_usd=20000),
    ),
    (
        "llama-3.1-405b pretrain 1T tokens",
        Workload(model="llama-3.1-405b", kind="pretrain", tokens=1e12),
        Constraints(),
    ),
    ("resnet50 90 epochs ImageNet", Workload(model="resnet50", samples=1.28e6, epochs=90), Constraints()),
    (
        "llama-3.1-8b serving 20 req/s",
        Workload(model="llama-3.1-8b", kind="inference", requests_per_s=20),
        Constraints(),
    ),
    ("mixtral-8x7b qlora", Workload(model="mixtral-8x7b", kind="qlora", tokens=1e8), Constraints()),
    (
        "llama-3.1-405b pretrain, up to 65,536",
        Workload(model="llama-3.1-405b", kind="pretrain", tokens=15e12),
        Constraints(max_gpus=65536),
    ),
]
REPEATS = 7


def in_process() -> None:
    t0 = time.perf_counter()
    knowledge = load_knowledge()
    model = efficiency_model(knowledge)
    print(
        f"load knowledge + efficiency model: {(time.perf_counter() - t0) * 1000:.0f} ms "
        "(first run after install also parses TOML into the cache)"
    )
    for name, workload, constraints in CASES:
        recommend(knowledge, workload, constraints, model)  # warm: schema builds, rule compilation
        times = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            report = recommend(knowledge, workload, constraints, model)
            times.append(time.perf_counter() - t)
        print(
            f"  {name:<36} median {statistics.median(times) * 1000:6.1f} ms, min {min(times) * 1000:6.1f} ms "
            f"({report.plans_considered} fitting plans of {len(knowledge.gpus)} GPUs x up to "
            f"{constraints.max_gpus:,} GPUs)"
        )


def _child(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def whole_process() -> None:
    """The README example as a whole process, wall and CPU time, against `python -c pass` in the same run."""
    exe = Path(sys.executable).with_name("gpu-advisor")
    cmd = [
        str(exe),
        "recommend",
        "--model",
        "llama-2-70b",
        "--workload",
        "finetune",
        "--precision",
        "bf16",
        "--budget",
        "20000",
    ]
    floor_cmd = [sys.executable, "-c", "pass"]
    _child(cmd)  # fill the parse cache
    _child(floor_cmd)
    runs = [_child(cmd) for _ in range(REPEATS)]
    floor = [_child(floor_cmd) for _ in range(REPEATS)]
    wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    wall0, cpu0 = statistics.median(r[0] for r in floor), statistics.median(r[1] for r in floor)
    print(
        f"whole process `{' '.join(cmd[1:])}`: wall median {wall:.3f} s (min {min(r[0] for r in runs):.3f}), "
        f"CPU median {cpu:.3f} s (min {min(r[1] for r in runs):.3f})"
    )
    print(
        f"  `python -c pass`: wall {wall0:.3f} s, CPU {cpu0:.3f} s; ratio wall {wall / wall0:.1f}x, "
        f"CPU {cpu / cpu0:.1f}x (goal: at most 6x)"
    )


if __name__ == "__main__":
    in_process()
    whole_process()
