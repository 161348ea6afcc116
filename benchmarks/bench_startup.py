"""Prints each command's start-up cost as CPU time in ratio to `python -c pass`, measured in the same run.

CPU time (user + system of the child, from resource.getrusage) rather than wall time, because these machines
are shared: another process's load changes wall time, not a command's own CPU time. Each figure is the median
of several runs after one warm-up run (which fills the knowledge cache, as any second use of the tool would).
The guided UI's first screen is compared with a Textual hello-world drawn the same way (headless, fixed size,
exit once the first screen is up).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLI = (
    "import sys\nfrom advisor.cli.main import main\nsys.argv[0] = 'gpu-advisor'\n"
    "try:\n    code = main({args!r})\nexcept SystemExit as exc:\n    code = exc.code\nsys.exit(code or 0)\n"
)
# Both UI probes exit from the first refresh after mount: the screen has been composed and painted once.
UI_PROBE = """
import sys
{setup}
async def first_screen(pilot):
    await pilot.pause()
    pilot.app.exit()
app.run(headless=True, size=(120, 40), auto_pilot=first_screen)
"""
HELLO = (
    "from textual.app import App\nfrom textual.widgets import Static\n"
    "class Hello(App):\n    def compose(self):\n        yield Static('Hello, world')\napp = Hello()"
)
ADVISOR_UI = "from tui.app import GpuAdvisorApp\napp = GpuAdvisorApp()"

COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "gpus": ["gpus"],
    "checklist": ["checklist", "oom"],
    "predict": [
        "predict",
        "--model",
        "llama-2-7b",
        "--workload",
        "finetune",
        "--gpu",
        "h100-sxm",
        "--count",
        "8",
    ],
    "recommend": ["recommend", "--model", "llama-2-70b", "--workload", "finetune", "--budget", "20000"],
    "recommend json": [
        "recommend",
        "--model",
        "llama-2-70b",
        "--workload",
        "finetune",
        "--budget",
        "20000",
        "--format",
        "json",
    ],
}
# The goals: (what, at most this ratio, measured against which baseline).
GOALS: dict[str, tuple[float, str]] = {
    "recommend": (6.0, "python"),
    "recommend json": (6.0, "python"),
    "gpus": (4.0, "python"),
    "checklist": (4.0, "python"),
    "guided UI first screen": (1.5, "textual hello-world"),
}


def cpu_seconds(code: str, env: dict[str, str]) -> float:
    """CPU seconds (user + system) one `python -c code` child takes, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-c", code],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(code: str, env: dict[str, str], repeats: int) -> float:
    cpu_seconds(code, env)  # warm-up: fills the knowledge cache and the OS file cache
    return statistics.median(cpu_seconds(code, env) for _ in range(repeats))


def heavy_modules(args: list[str], env: dict[str, str]) -> str:
    """Which expensive libraries one command imports."""
    code = CLI.format(args=args).replace("sys.exit(code or 0)", "")
    code += (
        "import sys as _s\nprint('HEAVY', sorted(m for m in ('pydantic', 'sklearn', 'numpy', 'textual', "
        "'plotext', 'tomllib', 'tomli_w') if m in _s.modules), file=_s.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stderr
    lines = [line for line in out.splitlines() if line.startswith("HEAVY ")]
    return lines[-1][6:] if lines else "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command (median taken)")
    parser.add_argument("--no-ui", action="store_true", help="skip the guided UI measurement")
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "GPU_ADVISOR_CACHE_DIR": cache, "GPU_ADVISOR_TODAY": "2025-06-01"}
        env.pop("GPU_ADVISOR_NO_CACHE", None)
        floor = median_cpu("pass", env, opts.repeats)
        print(
            f"python -c pass: {floor * 1000:.0f} ms CPU (median of {opts.repeats}); "
            f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
        )
        results: dict[str, float] = {}
        for name, args in COMMANDS.items():
            cpu = median_cpu(CLI.format(args=args), env, opts.repeats)
            results[name] = cpu / floor
            heavy = heavy_modules(args, env)
            print(f"  {name:<24} {cpu * 1000:6.0f} ms  {cpu / floor:5.1f}x python   imports {heavy}")
        if not opts.no_ui:
            hello = median_cpu(UI_PROBE.format(setup=HELLO), env, opts.repeats)
            ui = median_cpu(UI_PROBE.format(setup=ADVISOR_UI), env, opts.repeats)
            results["guided UI first screen"] = ui / hello
            print(f"  {'textual hello-world':<24} {hello * 1000:6.0f} ms  {hello / floor:5.1f}x python")
            print(
                f"  {'guided UI first screen':<24} {ui * 1000:6.0f} ms  {ui / floor:5.1f}x python, "
                f"{ui / hello:.2f}x hello-world"
            )
    print("goals:")
    missed = 0
    for name, (limit, base) in GOALS.items():
        if name not in results:
            continue
        ok = results[name] <= limit
        missed += not ok
        print(f"  {name:<24} {results[name]:5.2f}x {base} (goal <= {limit:g}x): {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
