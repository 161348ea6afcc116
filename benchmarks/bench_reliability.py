"""Runs the fault and bad-input campaign at full size; prints inputs tried, exit codes, tracebacks, data lost.

In-process: every hostile value on every flag, random combinations, hostile --from files and calibration CSVs,
and stored files gone bad. Through the real entry point: a sample of the same, devices, no terminal, a full
stdout. Concurrency: rounds of 20 `calibrate` processes on one data directory.
Usage: python benchmarks/bench_reliability.py [--rounds N] [--random N] [--subprocess-every N]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fuzz")]

import fuzz_cases as fc  # noqa: E402
from test_concurrency import PARALLEL, parallel_calibrate  # noqa: E402


class Tally:
    """Exit codes, problems and lost data over every input tried."""

    def __init__(self) -> None:
        self.codes: collections.Counter[int] = collections.Counter()
        self.problems: collections.Counter[str] = collections.Counter()
        self.examples: dict[str, str] = {}
        self.inputs = 0
        self.lost = 0
        self.lost_runs = 0

    def add(self, label: str, outcome: fc.Outcome) -> None:
        self.inputs += 1
        self.codes[outcome.code] += 1
        for problem in fc.problems(outcome):
            self.problems[problem] += 1
            self.examples.setdefault(problem, f"{label}: {outcome.stderr.strip().splitlines()[-1:]}")

    def run(self, label: str, argv: list[str]) -> None:
        try:
            outcome = fc.run_in_process(argv)
        except BaseException as exc:  # noqa: BLE001 - an exception escaping main() is a traceback
            outcome = fc.Outcome(70, "", f"Traceback: {type(exc).__name__}: {exc}")
        self.add(label, outcome)


def flags(t: Tally, n_random: int) -> None:
    for argv in fc.flag_cases() + fc.random_cases(n_random):
        t.run(" ".join(argv), argv)


def files(t: Tally, tmp: Path) -> None:
    for name, content in fc.SPEC_FILES.items():
        path = fc.write_file(tmp / f"{name}.toml", content)
        for extra in ([], ["--budget", "5k"], ["--workload", "inference", "--epochs", "2"], ["--top", "0"]):
            t.run(f"--from {name}", ["recommend", "--from", str(path), *extra])
    for target in ("/dev/zero", "/dev/null", str(tmp), "/nonexistent/x.toml"):
        t.run(f"--from {target}", ["recommend", "--from", target])
    for name, content in fc.CSV_FILES.items():
        if (
            name not in fc.CSV_ACCEPTED
        ):  # accepted files refit (seconds each): the concurrency rounds cover them
            t.run(f"calibrate {name}", ["calibrate", str(fc.write_file(tmp / f"{name}.csv", content))])


def stored(t: Tally, tmp: Path) -> None:
    """Each stored file gone bad: the command must answer and the bad bytes must survive in an aside copy."""
    shipped = (ROOT / "knowledge" / "efficiency_model.json").read_text(encoding="utf-8")
    good_runs = str(fc.CSV_FILES["good"]) + fc.GOOD_ROW.format(tp=1500, tag="second") + "\n"
    cases = [("model", k, f(shipped)) for k, f in fc.MODEL_CORRUPTIONS.items()]
    cases += [("runs", k, f(good_runs)) for k, f in fc.RUNS_CORRUPTIONS.items()]
    for i, (store, name, bad) in enumerate(cases):
        os.environ["GPU_ADVISOR_DATA_DIR"] = str(tmp / f"stored-{i}")
        folder = tmp / f"stored-{i}" / "calibration"
        folder.mkdir(parents=True)
        path = fc.write_file(folder / ("efficiency_model.json" if store == "model" else "runs.csv"), bad)
        argv = (
            ["predict", "--model", "resnet50", "--gpu", "h100"]
            if store == "model"
            else ["calibrate", "--list"]
        )
        t.run(f"stored {store} {name}", argv)
        kept = [p.read_bytes() for p in fc.aside_files(folder)]
        if bad.encode("utf-8", "surrogatepass") not in kept and path.read_bytes() != bad.encode(
            "utf-8", "surrogatepass"
        ):
            t.lost += 1
    from advisor.catalog.userdata import ChecklistTicks

    for name, bad in fc.TICKS_CORRUPTIONS.items():
        path = fc.write_file(tmp / f"ticks-{name}" / "checklist-ticks.json", bad)
        t.inputs += 1
        with contextlib.redirect_stderr(io.StringIO()):  # the one warning line each is expected
            ChecklistTicks(path).set("oom", 1, True)
        if bad.encode() not in [p.read_bytes() for p in fc.aside_files(path.parent)]:
            t.lost += 1


def processes(t: Tally, tmp: Path, every: int) -> None:
    """Through the real entry point: a sample of the flag cases, devices, no terminal, a full stdout."""
    os.mkfifo(tmp / "fifo")
    sample = fc.flag_cases()[::every]
    for argv in sample:
        t.add(" ".join(argv), fc.run_process([a.replace("\x00", "") for a in argv]))
    for target in ("/dev/zero", str(tmp / "fifo"), str(tmp)):
        t.add(f"--from {target}", fc.run_process(["recommend", "--from", target], timeout=30))
    t.add("no terminal", fc.run_process([], timeout=30, stdin=subprocess.DEVNULL))
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-m", "advisor.cli.main", "gpus"],
            stdout=full,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    t.add("gpus > /dev/full", fc.Outcome(r.returncode, "", r.stderr.decode()))
    t.add(
        "ascii stdout",
        fc.run_process(["recommend", "--model", "llama-2-7b"], env={"PYTHONIOENCODING": "ascii"}),
    )


def concurrency(t: Tally, tmp: Path, rounds: int) -> None:
    for r in range(rounds):
        data = tmp / f"parallel-{r}" / "data"
        data.mkdir(parents=True)
        codes = parallel_calibrate(data)
        t.inputs += len(codes)
        t.codes.update(codes)
        listed = fc.run_process(
            ["calibrate", "--list", "--format", "json"], env={"GPU_ADVISOR_DATA_DIR": str(data)}
        )
        stored_runs = len(json.loads(listed.stdout)) if listed.code == 0 else 0
        t.lost_runs += PARALLEL - stored_runs
        print(
            f"  round {r + 1}: {PARALLEL} parallel calibrate, exit codes {sorted(set(codes))}, "
            f"{stored_runs} runs stored"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1, help="rounds of 20 parallel calibrate runs")
    parser.add_argument("--random", type=int, default=600, help="random multi-flag commands")
    parser.add_argument(
        "--subprocess-every", type=int, default=10, help="every Nth flag case also as a process"
    )
    opts = parser.parse_args()
    t = Tally()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-reliability-") as name:
        tmp = Path(name)
        os.environ["GPU_ADVISOR_DATA_DIR"] = str(tmp / "user-data")
        steps = (
            ("flags in-process", lambda: flags(t, opts.random)),
            ("files", lambda: files(t, tmp)),
            ("stored files gone bad", lambda: stored(t, tmp)),
            ("real processes", lambda: processes(t, tmp, opts.subprocess_every)),
            ("concurrency", lambda: concurrency(t, tmp, opts.rounds)),
        )
        for label, step in steps:
            before, t0 = t.inputs, time.perf_counter()
            step()
            print(f"{label}: {t.inputs - before} inputs in {time.perf_counter() - t0:.0f} s")
    print(f"inputs tried: {t.inputs} in {time.perf_counter() - start:.0f} s")
    print("exit codes: " + ", ".join(f"{code}: {n}" for code, n in sorted(t.codes.items())))
    print(f"tracebacks (or internal errors): {t.problems.get('traceback', 0)}")
    other = {k: v for k, v in t.problems.items() if k != "traceback"}
    print(
        f"other problems (multi-line errors, raw control characters, odd exit codes): {sum(other.values())} "
        f"{other}"
    )
    for problem, example in t.examples.items():
        print(f"  e.g. {problem}: {example}")
    print(f"stored files lost: {t.lost}; calibration runs lost: {t.lost_runs}")


if __name__ == "__main__":
    main()
