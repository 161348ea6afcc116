"""Prints each command's start-up cost as CPU time in ratio to `python -c pass`, measured in the same run.

CPU time (user + system of the child, from resource.getrusage) rather than wall time, because these machines
are shared: another process's load changes wall time, not a command's own CPU time. Each figure is the median
of several runs after one warm-up run (which fills the knowledge cache, as any second use of the tool would).
The guided UI's first screen is compared with a Textual hello-world drawn the same way (headless, fixed size,
exit once the first screen is up).

By default everything runs in a throwaway virtual environment holding the project as a regular wheel with
its bytecode compiled, as a user installs it (`--install editable` measures this checkout's editable install
instead: its floor is higher, because site imports the editable finder). The dependencies come from the
running environment through a .pth line, so no network is needed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import venv
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = [sys.executable]  # the interpreter measured: the wheel environment's, once built
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
    # Issue 26's: an 8B model on 8 GPUs of a catalogued type.
    "predict 8B pretrain x8": [
        "predict",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "pretrain",
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
# The shipped `recommend` examples (README's and `recommend --help`'s, those that need no file), each held to
# the examples' goal.
EXAMPLES: dict[str, list[str]] = {
    "example 70B bf16 budget": [
        "recommend",
        "--model",
        "llama-2-70b",
        "--workload",
        "finetune",
        "--precision",
        "bf16",
        "--budget",
        "20000",
    ],
    "example resnet50 deadline": [
        "recommend",
        "--model",
        "resnet50",
        "--samples",
        "200k",
        "--epochs",
        "30",
        "--deadline",
        "72",
        "--objective",
        "cheapest",
    ],
    "example 8B serving": [
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "inference",
        "--requests-per-s",
        "20",
        "--tpot-ms",
        "50",
    ],
    "example 70B qlora 1 GPU": [
        "recommend",
        "--model",
        "llama-2-70b",
        "--workload",
        "qlora",
        "--max-gpus",
        "1",
    ],
    "example 13B lora spot": [
        "recommend",
        "--params",
        "13B",
        "--workload",
        "lora",
        "--tokens",
        "2e8",
        "--pricing",
        "spot",
        "--format",
        "toml",
    ],
    "example shape": [
        "recommend",
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--heads",
        "32",
        "--kv-heads",
        "8",
        "--ffn",
        "14336",
        "--vocab",
        "128256",
        "--tokens",
        "1e9",
    ],
    "example 405B pretrain": [
        "recommend",
        "--model",
        "llama-3.1-405b",
        "--workload",
        "pretrain",
        "--max-gpus",
        "16384",
        "--stack",
        "megatron",
    ],
    "example 8B serving SLO": [
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "inference",
        "--requests-per-s",
        "20",
        "--ttft-ms",
        "500",
        "--tpot-ms",
        "50",
        "--engine",
        "vllm",
    ],
}
# Issue 19's goals, CPU time of a wheel install against `python -c pass`: (at most this ratio, baseline).
GOALS: dict[str, tuple[float, str]] = {
    "recommend": (12.0, "python"),
    "predict": (6.0, "python"),
    **dict.fromkeys(EXAMPLES, (20.0, "python")),
    "guided UI first screen": (1.5, "textual hello-world"),
}


def wheel_python(work: Path, tree: Path = ROOT) -> str:
    """A checkout (this one by default) as a wheel, bytecode compiled, in a fresh venv under work: that venv's
    python."""
    dist = work / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(tree),
        ],
        check=True,
        cwd=work,
        stdout=subprocess.DEVNULL,
    )
    env_dir = work / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(next(dist.glob("gpu_advisor-*.whl"))) as archive:
        archive.extractall(purelib)
    subprocess.run([str(python), "-m", "compileall", "-q", str(purelib)], check=True)
    # The dependencies: this environment's site-packages after the fresh one, without its editable finder.
    (purelib / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return str(python)


def cpu_seconds(code: str, env: dict[str, str], python: list[str] | None = None) -> float:
    """CPU seconds (user + system) one `python -c code` child takes, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [*(python or PYTHON), "-c", code],
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


def side_by_side(code: str, trees: list[tuple[list[str], dict[str, str]]], repeats: int) -> list[float]:
    """Median CPU seconds of one `python -c code` in each tree's install (its python and environment), the
    runs interleaved so that the host's load weighs on every tree alike."""
    runs: list[list[float]] = [[] for _ in trees]
    for python, env in trees:
        cpu_seconds(code, env, python)  # warm-up
    for _ in range(repeats):
        for i, (python, env) in enumerate(trees):
            runs[i].append(cpu_seconds(code, env, python))
    return [statistics.median(r) for r in runs]


def instructions(code: str, env: dict[str, str]) -> int:
    """Instructions one `python -c code` child executes (valgrind's callgrind): unlike CPU time, the same
    on a loaded machine as on an idle one."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *PYTHON, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    ).stderr
    refs = [line for line in out.splitlines() if "refs:" in line or "Collected :" in line]
    return int(refs[-1].split(":")[-1].replace(",", "").split()[0]) if refs else 0


def heavy_modules(args: list[str], env: dict[str, str]) -> str:
    """Which expensive libraries one command imports."""
    code = CLI.format(args=args).replace("sys.exit(code or 0)", "")
    code += (
        "import sys as _s\nprint('HEAVY', sorted(m for m in ('pydantic', 'sklearn', 'numpy', 'textual', "
        "'plotext', 'tomllib', 'tomli_w') if m in _s.modules), file=_s.stderr)\n"
    )
    out = subprocess.run([*PYTHON, "-c", code], capture_output=True, text=True, env=env).stderr
    lines = [line for line in out.splitlines() if line.startswith("HEAVY ")]
    return lines[-1][6:] if lines else "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command (median taken)")
    parser.add_argument("--no-ui", action="store_true", help="skip the guided UI measurement")
    parser.add_argument(
        "--install", choices=("wheel", "editable"), default="wheel", help="what is measured (default: wheel)"
    )
    parser.add_argument("--no-examples", action="store_true", help="skip the README's recommend examples")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each command's instructions under valgrind (load-independent; slow)",
    )
    parser.add_argument(
        "--against",
        metavar="DIR",
        help="another checkout (main's, say) measured side by side as a wheel install: its ratios first",
    )
    opts = parser.parse_args(argv)
    if opts.against:
        return compare(Path(opts.against).resolve(), opts.repeats, not opts.no_examples, opts.instructions)
    with tempfile.TemporaryDirectory() as cache:
        if opts.install == "wheel":
            PYTHON[:] = [wheel_python(Path(cache))]
        env = {**os.environ, "GPU_ADVISOR_CACHE_DIR": cache, "GPU_ADVISOR_TODAY": "2025-06-01"}
        if opts.install == "wheel":
            env["PYTHONPATH"] = ""  # the wheel, never this checkout, provides advisor
            os.chdir(cache)
        env.pop("GPU_ADVISOR_NO_CACHE", None)
        floor = median_cpu("pass", env, opts.repeats)
        print(
            f"{opts.install} install; python -c pass: {floor * 1000:.0f} ms CPU (median of {opts.repeats}); "
            f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
        )
        results: dict[str, float] = {}
        commands = {**COMMANDS, **({} if opts.no_examples else EXAMPLES)}
        floor_ir = instructions("pass", env) if opts.instructions else 0
        if floor_ir:
            print(f"python -c pass: {floor_ir / 1e6:.0f}M instructions")
        for name, args in commands.items():
            cpu = median_cpu(CLI.format(args=args), env, opts.repeats)
            results[name] = cpu / floor
            heavy = heavy_modules(args, env)
            ir = ""
            if floor_ir:
                ir = f"  {instructions(CLI.format(args=args), env) / floor_ir:5.1f}x in instructions"
            print(f"  {name:<24} {cpu * 1000:6.0f} ms  {cpu / floor:5.1f}x python{ir}   imports {heavy}")
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


def compare(other: Path, repeats: int, examples: bool, count_instructions: bool = False) -> int:
    """Every command in two wheel installs, the other checkout's and this one's, their runs interleaved:
    each tree's ratio to its own `python -c pass`, the other's first (with `count_instructions`, also each
    tree's instructions under callgrind, which do not move with the host's load)."""
    with tempfile.TemporaryDirectory() as work:
        trees = []
        for name, tree in (("against", other), ("this", ROOT)):
            folder = Path(work) / name
            folder.mkdir()
            python = [wheel_python(folder, tree)]
            env = {**os.environ, "GPU_ADVISOR_CACHE_DIR": str(folder / "cache"), "PYTHONPATH": ""}
            env["GPU_ADVISOR_TODAY"] = "2025-06-01"
            env.pop("GPU_ADVISOR_NO_CACHE", None)
            trees.append((python, env))
        os.chdir(work)
        floors = side_by_side("pass", trees, repeats)
        print(f"wheel installs, CPU median of {repeats} interleaved runs; python -c pass: ", end="")
        print(f"{floors[0] * 1000:.0f} ms ({other}) and {floors[1] * 1000:.0f} ms (this tree)")
        floors_ir = [tree_instructions("pass", t) for t in trees] if count_instructions else []
        for name, args in {**COMMANDS, **(EXAMPLES if examples else {})}.items():
            cpus = side_by_side(CLI.format(args=args), trees, repeats)
            before, after = cpus[0] / floors[0], cpus[1] / floors[1]
            goal = GOALS.get(name)
            mark = f"   (goal <= {goal[0]:g}x)" if goal else ""
            ir = ""
            if floors_ir:
                code = CLI.format(args=args)
                was, now = (tree_instructions(code, t) / f for t, f in zip(trees, floors_ir, strict=True))
                ir = f"; instructions {was:5.1f}x -> {now:5.1f}x ({now / was - 1:+.0%})"
            change = f"({after / before - 1:+.0%})"
            print(f"  {name:<24} {before:5.1f}x -> {after:5.1f}x python  {change}{ir}{mark}")
    return 0


def tree_instructions(code: str, tree: tuple[list[str], dict[str, str]]) -> int:
    """instructions() of one `python -c code` in one tree's install (its python and environment)."""
    python, env = tree
    PYTHON[:] = python
    return instructions(code, env)


if __name__ == "__main__":
    sys.exit(main())
