"""Prints the guided UI's first-frame CPU against a Textual hello-world: the main thread's CPU up to the first
painted screen (what delays the frame), and the whole process's (which also counts the knowledge-loading
worker that starts once the wizard is up).

Usage: bench_first_frame.py [--repeats N] [--against DIR]. --against DIR measures another checkout's source
tree side by side (e.g. a `git worktree` of the commit before a change), alternating runs so that the load of
a shared machine falls on both alike. Every child runs in a neutral folder, so that the current directory does
not shadow the tree measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import time
{setup}
async def first_screen(pilot):
    await pilot.pause()
    print("CPU", time.thread_time(), time.process_time())
    pilot.app.exit()
app.run(headless=True, size=(120, 40), auto_pilot=first_screen)
"""
HELLO = (
    "from textual.app import App\nfrom textual.widgets import Static\n"
    "class Hello(App):\n    def compose(self):\n        yield Static('Hello, world')\napp = Hello()"
)
ADVISOR_UI = "from tui.app import GpuAdvisorApp\napp = GpuAdvisorApp()"


def probe(setup: str, env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(main-thread CPU s, process CPU s) at the first painted screen."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)], capture_output=True, text=True, env=env, cwd=cwd
    ).stdout
    fields = [line for line in out.splitlines() if line.startswith("CPU ")][-1].split()
    return float(fields[1]), float(fields[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs of each (median taken)")
    parser.add_argument("--against", metavar="DIR", help="another source tree to measure side by side")
    opts = parser.parse_args(argv)
    trees = {"this tree": str(ROOT)} | ({"against": opts.against} if opts.against else {})
    with tempfile.TemporaryDirectory() as cwd:
        base = {**os.environ, "GPU_ADVISOR_CACHE_DIR": cwd, "GPU_ADVISOR_TODAY": "2025-06-01"}
        runs: dict[str, tuple[str, dict[str, str]]] = {"hello-world": (HELLO, base)}
        runs |= {name: (ADVISOR_UI, {**base, "PYTHONPATH": tree}) for name, tree in trees.items()}
        for setup, env in runs.values():  # warm-up: the knowledge cache, the OS file cache
            probe(setup, env, cwd)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for _ in range(opts.repeats):
            for name, (setup, env) in runs.items():
                samples[name].append(probe(setup, env, cwd))
    hello = statistics.median(m for m, _ in samples["hello-world"])
    print(f"first frame, CPU seconds (median of {opts.repeats}); main thread / whole process:")
    for name, values in samples.items():
        main_cpu = statistics.median(m for m, _ in values)
        whole = statistics.median(p for _, p in values)
        ratio = f"({main_cpu / hello:.2f}x hello-world)"
        print(f"  {name:<12} {main_cpu * 1000:5.0f} ms {ratio} / {whole * 1000:5.0f} ms")
    print("goal: the guided UI's main thread at most 1.5x hello-world's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
