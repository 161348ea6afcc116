"""Several `gpu-advisor calibrate` runs at once on one data directory: every run is stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_cases import COLUMNS, GOOD_ROW, ROOT, run_process
from scale import scaled

# Enough writers to race for the store (each refits the model under the lock, one after another): three
# queue behind one lock holder; `make test-slow` starts 5. 20 took minutes on two cores and proved no more.
PARALLEL = scaled(3, 5)


def parallel_calibrate(data_dir: Path, n: int = PARALLEL, offset: int = 0) -> list[int]:
    """n calibrate processes started together, each with one distinct run; their exit codes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPU_ADVISOR_DATA_DIR": str(data_dir)}
    procs = []
    for i in range(n):
        csv_path = data_dir.parent / f"run-{offset + i}.csv"
        csv_path.write_text(COLUMNS + "\n" + GOOD_ROW.format(tp=1300 + offset + i, tag=offset + i) + "\n")
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "advisor.cli.main", "calibrate", str(csv_path)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    return [p.wait(timeout=900) for p in procs]


@pytest.mark.slow
def test_parallel_calibrate_keeps_every_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    codes = parallel_calibrate(data)
    assert codes == [0] * PARALLEL
    listed = run_process(["calibrate", "--list", "--format", "json"], env={"GPU_ADVISOR_DATA_DIR": str(data)})
    runs = [r for profile in json.loads(listed.stdout).values() for r in profile]
    assert len(runs) == PARALLEL and len({r["measured"]["throughput"] for r in runs}) == PARALLEL
    table = run_process(["calibrate", "--list"], env={"GPU_ADVISOR_DATA_DIR": str(data)})
    assert f"{PARALLEL} run(s)" in table.stdout
