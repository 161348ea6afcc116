"""The fault and bad-input campaign as data: hostile flags, --from files, calibration CSVs, stored files.

Shared by the fuzz tests (a sample) and benchmarks/bench_reliability.py (all of it, and more).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]
COLUMNS = (
    "workload,gpu,count,nodes,precision,batch_per_gpu,seq_len,throughput,unit,grad_accum,sharding,"
    "recompute,reported_mfu,software,source,row_ref,note"
)
GOOD_ROW = "resnet50,A100 80GB SXM4,1,1,fp16,256,,{tp},images/s,,,,,,our cluster {tag},,"

# Values a user (or a script gone wrong) may pass to any flag.
HOSTILE = [
    "",
    " ",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "1e400",
    "-1e400",
    "1e-300",
    "0",
    "-0",
    "-1",
    "1e20",
    "3.5",
    "1e308",
    "9" * 400,
    "\x1b[31mred",
    "\u202eevil",
    "1_000",
    "0x10",
    "1e",
    "k",
    "20k",
    "2T",
    "1.5B",
    "\U0001f600",
    "-",
    "'",
    "7",
    "64",
    "0.5",
    "1mo",
    "3d",
    "10",
    "11",
    "1e6",
    "2",
    "1024",
    "1025",
]
BASES = {
    "recommend": ["recommend", "--model", "llama-2-7b", "--tokens", "1B"],
    "recommend-inference": ["recommend", "--model", "llama-2-7b", "--workload", "inference"],
    "recommend-onprem": ["recommend", "--model", "llama-2-7b", "--tokens", "1B", "--deployment", "on-prem"],
    "predict": ["predict", "--model", "resnet50", "--gpu", "h100"],
    "tco": ["tco", "--gpu", "h100", "--count", "8"],
}
FLAGS = {
    "recommend": [
        "--model",
        "--params",
        "--seq-len",
        "--batch-size",
        "--lora-rank",
        "--tokens",
        "--samples",
        "--epochs",
        "--dataset-gb",
        "--budget",
        "--deadline",
        "--provider",
        "--gpu",
        "--max-gpus",
        "--headroom",
        "--fabric",
        "--top",
        "--requests-per-s",
        "--prompt-tokens",
        "--output-tokens",
        "--tpot-ms",
        "--ttft-ms",
    ],
    "recommend-inference": [
        "--requests-per-s",
        "--prompt-tokens",
        "--output-tokens",
        "--tpot-ms",
        "--ttft-ms",
        "--epochs",
        "--tokens",
    ],
    "recommend-onprem": ["--years", "--utilization", "--electricity-usd-kwh"],
    "predict": ["--count", "--seq-len", "--batch-size", "--headroom", "--fabric", "--params", "--gpu"],
    "tco": [
        "--count",
        "--years",
        "--utilization",
        "--electricity-usd-kwh",
        "--pue",
        "--staff-usd-year",
        "--off-peak-usd-kwh",
        "--gpu-hours-per-month",
        "--gpu",
    ],
}


def flag_cases() -> list[list[str]]:
    """Every base command with every one of its flags set to every hostile value."""
    cases = []
    for base, flags in FLAGS.items():
        for flag in flags:
            for value in HOSTILE:
                argv = list(BASES[base])
                if flag in argv:  # replace the base's own value
                    argv[argv.index(flag) + 1] = value
                else:
                    argv += [f"{flag}={value}"]
                cases.append(argv)
    return cases


def random_cases(n: int, seed: int = 12) -> list[list[str]]:
    """n commands with two to four hostile flags at once."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        base = rng.choice(list(FLAGS))
        flags = rng.sample(FLAGS[base], k=min(len(FLAGS[base]), rng.randint(2, 4)))
        out.append(BASES[base] + [f"{f}={rng.choice(HOSTILE)}" for f in flags])
    return out


SPEC_HEAD = 'schema_version = 1\n[inputs.workload]\nmodel = "llama-2-7b"\nkind = "finetune"\n'
SPEC_FILES: dict[str, str | bytes] = {
    "good": SPEC_HEAD + "[inputs.constraints]\nbudget_usd = 20000.0\n",
    "no-version": '[inputs.workload]\nmodel = "llama-2-7b"\n',
    "version-2": SPEC_HEAD.replace("= 1", "= 2"),
    "version-999": SPEC_HEAD.replace("= 1", "= 999"),
    "version-one": SPEC_HEAD.replace("= 1", '= "one"'),
    "version-bool": SPEC_HEAD.replace("= 1", "= true"),
    "bad-enum": SPEC_HEAD.replace('"finetune"', '"dance"'),
    "wrong-type": "schema_version = 1\n[inputs.workload]\nmodel = 7\n",
    "params-inf": "schema_version = 1\n[inputs.workload]\nparams = inf\n",
    "params-nan": "schema_version = 1\n[inputs.workload]\nparams = nan\n",
    "params-tiny": "schema_version = 1\n[inputs.workload]\nparams = 1e-300\n",
    "tokens-inf": SPEC_HEAD + "tokens = inf\n",
    "tokens-str": SPEC_HEAD + 'tokens = "lots"\n',
    "seq-float": SPEC_HEAD + "seq_len = 2048.5\n",
    "budget-neg": SPEC_HEAD + "[inputs.constraints]\nbudget_usd = -1.0\n",
    "budget-huge": SPEC_HEAD + "[inputs.constraints]\nbudget_usd = 1e300\n",
    "top-zero": SPEC_HEAD + "[inputs.constraints]\ntop = 0\n",
    "providers-escape": SPEC_HEAD + '[inputs.constraints]\nproviders = ["\\u001b[31maws"]\n',
    "model-escape": 'schema_version = 1\n[inputs.workload]\nmodel = "\\u001b]0;pwned\\u0007"\n',
    "inputs-array": "schema_version = 1\ninputs = [1, 2]\n",
    "workload-string": 'schema_version = 1\n[inputs]\nworkload = "x"\n',
    "constraints-array": SPEC_HEAD.replace(
        "[inputs.workload]", "[inputs]\nconstraints = [1]\n[inputs.workload]"
    ),
    "unknown-field": SPEC_HEAD + "colour = 3\n",
    "deep-5000": "schema_version = 1\nx = " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-100": "schema_version = 1\nx = " + "[" * 100 + "]" * 100 + "\n" + SPEC_HEAD.split("\n", 1)[1],
    "not-toml": "{ this is json: 1 }",
    "empty": "",
    "binary": bytes(range(256)) * 4,
    "latin1": SPEC_HEAD.encode("utf-8") + b'note = "caf\xe9"\n',
    "bom": "\ufeff" + SPEC_HEAD,
    "huge": SPEC_HEAD + "# " + "x" * (2 << 20) + "\n",
}

CSV_FILES: dict[str, str | bytes] = {
    "good": COLUMNS + "\n" + GOOD_ROW.format(tp=1500, tag="a") + "\n",
    "bom-crlf": "\ufeff" + COLUMNS + "\r\n" + GOOD_ROW.format(tp=1500, tag="b") + "\r\n",
    "inf": COLUMNS + "\n" + GOOD_ROW.format(tp="inf", tag="c") + "\n",
    "1e400": COLUMNS + "\n" + GOOD_ROW.format(tp="1e400", tag="d") + "\n",
    "nan": COLUMNS + "\n" + GOOD_ROW.format(tp="NaN", tag="e") + "\n",
    "count-1e20": COLUMNS
    + "\n"
    + GOOD_ROW.format(tp=1500, tag="f").replace(",1,1,", ",100000000000000000000,1,", 1)
    + "\n",
    "short-row": COLUMNS + "\nresnet50,A100 80GB SXM4,1\n",
    "long-row": COLUMNS + "\n" + GOOD_ROW.format(tp=1500, tag="g") + ",extra,extra\n",
    "no-header": GOOD_ROW.format(tp=1500, tag="h") + "\n",
    "empty": "",
    "header-only": COLUMNS + "\n",
    "binary": bytes(range(256)) * 4,
    "nul": COLUMNS + "\n" + GOOD_ROW.format(tp=1500, tag="\x00") + "\n",
    "quote": COLUMNS + '\n"resnet50,A100\n',
    "escape-source": COLUMNS + "\n" + GOOD_ROW.format(tp=1500, tag="\x1b[2J") + "\n",
    "nodes-gt-count": COLUMNS + "\n" + GOOD_ROW.format(tp=1500, tag="i").replace(",1,1,", ",1,4,", 1) + "\n",
    "mfu-2": COLUMNS + "\n" + GOOD_ROW.format(tp=1500, tag="j").replace(",,,,,,our", ",,,,2,,our") + "\n",
}
CSV_ACCEPTED = {"good", "bom-crlf"}

# Stored files as they go bad: (store, what it holds).
MODEL_CORRUPTIONS: dict[str, Callable[[str], str]] = {
    "truncated": lambda t: t[: len(t) // 2],
    "empty": lambda t: "",
    "list": lambda t: "[1, 2, 3]",
    "wrong-format": lambda t: t.replace("gpu-advisor-gbdt-v1", "v0"),
    "nan-baseline": lambda t: _edit(t, lambda d: d.__setitem__("baseline", float("nan"))),
    "nan-leaf": lambda t: _edit(t, lambda d: d["trees"][0]["value"].__setitem__(-1, float("nan"))),
    "index-out": lambda t: _edit(t, lambda d: d["trees"][0]["left"].__setitem__(0, 10**6)),
    "cycle": lambda t: _edit(t, lambda d: d["trees"][0]["left"].__setitem__(0, 0)),
    "short-features": lambda t: _edit(t, lambda d: d.__setitem__("features", d["features"][:2])),
    "rows-str": lambda t: _edit(t, lambda d: d.__setitem__("rows", "many")),
    "meta-rows": lambda t: _edit(t, lambda d: d["meta"].__setitem__("calibration_rows", "x")),
    "no-all": lambda t: _edit(t, lambda d: d.__setitem__("interval", {})),
    "deep": lambda t: "[" * 100000 + "]" * 100000,
    "binary": lambda t: "\udcff",
}
RUNS_CORRUPTIONS: dict[str, Callable[[str], str]] = {
    "truncated": lambda t: t[: t.rindex("images/s") - 3],
    "nan": lambda t: t.replace(",1500,", ",nan,"),
    "count-1e20": lambda t: t.replace(",1,1,", ",100000000000000000000,1,", 1),
    "no-header": lambda t: t.split("\n", 1)[1],
    "garbage": lambda t: "\x00\x01garbage",
    "extra-field": lambda t: t.rstrip("\n") + ",x\n",
}
TICKS_CORRUPTIONS: dict[str, str] = {
    "truncated": '{"oom": [0, 1',
    "list": "[1, 2]",
    "negative": '{"oom": [-1]}',
    "huge": '{"oom": [1e30]}',
    "string": '{"oom": ["a"]}',
    "nan": '{"oom": [NaN]}',
    "not-list": '{"oom": 3}',
    "empty": "",
}


def _edit(text: str, change: Callable[[dict], None]) -> str:
    data = json.loads(text)
    change(data)
    return json.dumps(data)


@dataclass
class Outcome:
    """What one CLI call did."""

    code: int
    stdout: str
    stderr: str


def run_in_process(argv: list[str]) -> Outcome:
    """gpu-advisor's main() on argv with captured output; an exception escaping main() is re-raised."""
    from advisor.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return Outcome(code, out.getvalue(), err.getvalue())


def run_process(
    argv: list[str], env: dict[str, str] | None = None, timeout: float = 60, **kwargs: object
) -> Outcome:
    """gpu-advisor in a subprocess (the real entry point's streams and signals)."""
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *argv],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=timeout,
        **kwargs,
    )
    return Outcome(
        result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")
    )


def problems(outcome: Outcome) -> list[str]:
    """What is wrong with an outcome: a traceback, an internal error, an unknown exit code, a multi-line
    error, or raw control characters reaching the terminal."""
    found = []
    if "Traceback" in outcome.stderr or outcome.code == 70:
        found.append("traceback")
    if outcome.code not in (0, 1, 2, 3):
        found.append(f"exit {outcome.code}")
    errors = [line for line in outcome.stderr.splitlines() if "error:" in line]
    if outcome.code == 2 and len(errors) != 1:
        found.append("not one error line")
    if any(ch in outcome.stderr for ch in ("\x1b", "\u202e", "\x07")):
        found.append("raw control characters")
    return found


def write_file(path: Path, content: str | bytes) -> Path:
    """content into path (text as UTF-8)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return path


def aside_files(folder: Path) -> Iterator[Path]:
    """Files moved or copied aside in folder."""
    return (p for p in folder.iterdir() if ".corrupt-" in p.name) if folder.is_dir() else iter(())
