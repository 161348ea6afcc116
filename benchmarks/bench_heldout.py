"""Print the tool's accuracy on held-out published runs (sources the project never used; docs/heldout.md).

Training (benchmarks/heldout_training_runs.csv): tokens/s per GPU, each run as published (every stated
value held) and as typed (model, GPU, count, precision, sequence length and workload only), against a
constant 40% MFU baseline on the same rows; P10-P90 coverage; share within 2x; per family, per source and
overall; Kendall's tau of the layout order within each group that varies only the layout. Serving
(benchmarks/heldout_serving_runs.csv): output throughput, TTFT and TPOT per loop kind (closed, open,
offline, static batch), within 2x. Refusals are listed.

Run: .venv/bin/python benchmarks/bench_heldout.py [--detail] [--runs heldout2|...|heldout10]   (seconds)
--runs picks the run set: benchmarks/<runs>_training_runs.csv and <runs>_serving_runs.csv (default heldout;
heldout2-heldout10 are the later sealed sets, docs/heldout.md).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import heldout_cli as cli
from heldout_stats import HEADER, Scored, balanced_median, kendall_tau, line

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_RUNS = "heldout"
SHAPE_FLAGS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts", "experts_per_token")
# Training configuration columns and the predict flag each one is held by (empty cells are left to the tool).
CONFIG_FLAGS = {
    "tp": "--tp",
    "pp": "--pp",
    "cp": "--cp",
    "ep": "--ep",
    "dp": "--dp",
    "zero": "--zero",
    "shard_group": "--shard-group",
    "recompute": "--recompute",
    "micro_batch": "--micro-batch",
    "global_batch": "--global-batch",
    "optimizer": "--optimizer",
    "offload": "--offload",
    "fused_loss": "--fused-loss",
    "stack": "--stack",
    "lora_rank": "--lora-rank",
    "lora_targets": "--lora-targets",
    "pp_schedule": "--pp-schedule",
}
MODES = ("stated", "typed")


def run_files(runs: str) -> tuple[Path, Path]:
    """The training and serving CSVs of a run set (benchmarks/<runs>_training_runs.csv, _serving_runs.csv)."""
    return HERE / f"{runs}_training_runs.csv", HERE / f"{runs}_serving_runs.csv"


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return [{k: (v or "").strip() for k, v in row.items() if k} for row in csv.DictReader(f)]


def shape_of(row: dict[str, str]) -> dict[str, int | str]:
    """The model_shape cell's keys: whole numbers, and ffn_type (gated or plain) as written."""
    parts = [p.split("=") for p in row.get("model_shape", "").split(";") if "=" in p]
    return {k.strip(): v.strip() if k.strip() == "ffn_type" else int(v) for k, v in parts}


def model_args(row: dict[str, str]) -> list[str]:
    if row.get("model"):
        return ["--model", row["model"]]
    if row.get("model_params"):  # a source that states only the parameter count (heldout3's Modalities rows)
        return ["--params", row["model_params"]]
    return [arg for k, v in shape_of(row).items() for arg in (f"--{k.replace('_', '-')}", str(v))]


def _flag(args: list[str], flag: str, value: str) -> None:
    if value:
        args += [flag, value]


# ---- training ----


def training_args(row: dict[str, str], mode: str) -> list[str]:
    args = [*model_args(row), "--workload", row["workload"], "--gpu", row["gpu"], "--count", row["count"]]
    _flag(args, "--precision", row.get("precision", ""))
    _flag(args, "--seq-len", row.get("seq_len", ""))
    if mode == "stated":
        for column, flag in CONFIG_FLAGS.items():
            _flag(args, flag, row.get(column, ""))
        if row.get("master_weights", "") == "false":  # pure 16-bit training, as the source's config states
            args.append("--no-master-weights")
        args += cli.fabric_args(row)  # the network the source states, where this build has its key
        args += cli.recompute_modules_args(row)  # the modules a selective row states it recomputes
        args += cli.dispatcher_args(row)  # DeepEP where the source states it
    return args


def _peaks() -> dict[str, dict[str, float]]:
    with (ROOT / "knowledge" / "gpus.toml").open("rb") as f:
        return {g["id"]: g.get("tflops", {}) for g in tomllib.load(f)["gpu"]}


PEAKS = _peaks()


def count_of(text: str) -> float:
    """A parameter count as written in a CSV cell: 2.7B, 350M, 1.2T or a plain number."""
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(text[-1:].upper(), 1.0)
    return float(text[:-1] if scale != 1.0 else text) * scale


def params_of(row: dict[str, str]) -> float | None:
    """Parameters per token (active ones for a mixture of experts), from the catalogue or shape counter."""
    if row.get("model_params"):
        return count_of(row["model_params"])
    try:
        if row.get("model"):
            from advisor.catalog import load_knowledge

            return float(load_knowledge().model(row["model"]).active)
        from advisor.catalog.hf_config import spec_from_shape

        shape = shape_of(row)
        gated = shape.pop("ffn_type", "gated") == "gated"
        spec = spec_from_shape(**shape, gated=gated)  # type: ignore[arg-type]
        return float(spec.active_params or spec.params)
    except Exception:  # noqa: BLE001 - the catalogue's API may move on other branches: the baseline is then left out
        return None


def constant_mfu(row: dict[str, str], mfu: float = 0.4) -> float | None:
    """Tokens/s per GPU at a constant 40% of the dense peak: 0.4 x peak / (6 x N)."""
    peaks = PEAKS.get(row["gpu"], {})
    precision = row.get("precision") or "bf16"
    tflops = peaks.get(precision) or peaks.get("bf16") or peaks.get("fp16")
    n = params_of(row)
    return mfu * tflops * 1e12 / (6 * n) if tflops and n else None


@dataclass(frozen=True, slots=True)
class TrainResult:
    row: dict[str, str]
    mode: str
    answer: cli.Answer
    scored: Scored


def run_training(row: dict[str, str], mode: str) -> TrainResult:
    answer = cli.predict(training_args(row, mode))
    count = int(row["count"])
    value = lo = hi = None
    if answer.data is not None:
        total = cli.p50(answer.data, "throughput")
        value = total / count if total is not None else None
        lo, hi = (x / count if x is not None else None for x in cli.band(answer.data, "throughput"))
    measured = float(row["tokens_per_s_per_gpu"])
    scored = Scored(row["id"], row["source_id"], row["family"], measured, value, lo, hi, constant_mfu(row))
    return TrainResult(row, mode, answer, scored)


def layout_taus(results: Sequence[TrainResult]) -> list[tuple[str, int, float | None]]:
    """Kendall's tau of measured vs predicted tokens/s within each layout group (as-stated answers only)."""
    groups: dict[str, list[tuple[float, float, object]]] = {}
    for r in results:
        group = r.row.get("layout_group", "")
        if group and r.mode == "stated" and r.scored.predicted is not None:
            groups.setdefault(group, []).append((r.scored.measured, r.scored.predicted, configuration(r.row)))
    return [
        (g, len(pairs), kendall_tau(pairs))
        for g, pairs in sorted(groups.items(), key=lambda x: _natural(x[0]))
    ]


def configuration(row: dict[str, str]) -> tuple[str, ...]:
    """The stated run as the tool is asked it, a shard group that spans every data-parallel rank written as
    none (InternEvo's zero1=8 on 8 data-parallel ranks is its zero1=-1 there): two rows with one configuration
    differ only by the source's run-to-run noise."""
    shard, dp, cp = row.get("shard_group", ""), row.get("dp", ""), row.get("cp", "")
    if shard and dp and int(shard) >= int(dp) * int(cp or 1):
        row = {**row, "shard_group": ""}
    return tuple(training_args(row, "stated"))


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return head, int(tail) if tail else 0


def print_training(results: Sequence[TrainResult], detail: bool) -> None:
    print("== Training: tokens/s per GPU on held-out published runs ==")
    for mode in MODES:
        scored = [r.scored for r in results if r.mode == mode]
        print(f"\n-- {'each run as published (stated values held)' if mode == 'stated' else 'as typed'} --")
        print(HEADER)
        for family in sorted({s.family for s in scored}):
            print(line(f"family {family}", [s for s in scored if s.family == family]))
        for source in sorted({s.source for s in scored}):
            print(line(f"  source {source}", [s for s in scored if s.source == source]))
        print(line("ALL", scored))
        bal = balanced_median(scored)
        print(f"source-balanced median error: {'-' if bal is None else f'{100 * bal:.1f}%'}")
    taus = layout_taus(results)
    print("\n-- layout ranking (as published): Kendall's tau within each group varying only the layout --")
    for group, n, tau in taus:
        print(f"{group:30} n={n:<3} tau={'-' if tau is None else f'{tau:+.2f}'}")
    valid = [t for _, _, t in taus if t is not None]
    if valid:
        print(f"mean tau over {len(valid)} groups: {sum(valid) / len(valid):+.2f}")
    _print_refusals([(r.row["id"], r.mode, r.answer) for r in results], detail)
    if detail:
        for r in results:
            s = r.scored
            pred = "refused" if s.predicted is None else f"{s.predicted:9.1f}"
            base = "-" if s.baseline is None else f"{s.baseline:9.1f}"
            print(f"  {s.row_id:14} {r.mode:6} measured {s.measured:9.1f}  tool {pred}  40%MFU {base}")


def _print_refusals(items: Sequence[tuple[str, str, cli.Answer]], detail: bool) -> None:
    refused = [(i, m, a) for i, m, a in items if a.data is None]
    dropped = sorted({f for _, _, a in items for f in a.dropped})
    print(f"\nrefused: {len(refused)} of {len(items)} calls")
    for row_id, mode, answer in refused[: None if detail else 25]:
        print(f"  {row_id:14} {mode:6} {answer.refusal[:150]}")
    if len(refused) > 25 and not detail:
        print(f"  ... {len(refused) - 25} more (--detail lists them all)")
    if dropped:
        print(f"flags this build lacks (dropped, so those values were not held): {', '.join(dropped)}")


# ---- serving ----


def serving_base(row: dict[str, str], mode: str) -> list[str]:
    args = [*model_args(row), "--workload", "inference", "--gpu", row["gpu"], "--count", row["count"]]
    _flag(args, "--precision", row.get("precision", ""))
    args += ["--prompt-tokens", row["isl"], "--output-tokens", row["osl"]]
    if mode == "stated":
        _flag(args, "--engine", row.get("engine", ""))
        _flag(args, "--tp", row.get("tp", ""))
        _flag(args, "--pp", row.get("pp", ""))
    # a workload fact, typed or not: the share of each prompt the engine had cached (the same prompts sent
    # again to a server with prefix caching on)
    _flag(args, "--prefix-cache-hit", row.get("prefix_cache_hit", ""))
    _flag(args, "--request-lengths", request_lengths(row))
    return args


HELD_LENGTHS = ("filtered to the input length", "new tokens", "max 512 output tokens")
"""ShareGPT rows whose harness held the lengths (prompts sampled near the stated length and exactly the
stated output asked for; a fixed number of new tokens) or capped the outputs well inside the spread (a
512-token cap at a 347-token mean): not spread as a ShareGPT run's own lengths are."""


def request_lengths(row: dict[str, str]) -> str:
    """A workload fact, typed or not: 'sharegpt' where the run sent ShareGPT conversations with their own
    lengths (vllm bench serve / sglang.bench_serving --dataset-name sharegpt: each request's prompt and
    output as the conversation has them, around the stated means), else '' (the stated lengths)."""
    dataset = row.get("dataset", "").lower()
    if "sharegpt" not in dataset or any(held in dataset for held in HELD_LENGTHS):
        return ""
    return "sharegpt"


def _e2e_s(data: dict, osl: int) -> float | None:
    ttft, tpot = cli.p50(data, "serving_ttft_ms"), cli.p50(data, "serving_tpot_ms")
    return None if ttft is None or tpot is None else (ttft + osl * tpot) / 1000


def closed_by_littles_law(base: list[str], concurrency: int, osl: int) -> cli.Answer:
    """A build without a concurrency input: the open-loop rate that keeps `concurrency` requests in flight, by
    Little's law on the tool's own latency (rate = C / end-to-end latency), a fixed point found in a few
    steps."""
    rate = 0.01
    answer = cli.predict([*base, "--requests-per-s", f"{rate:.6g}"])
    for _ in range(6):
        if answer.data is None:
            return answer
        e2e = _e2e_s(answer.data, osl)
        if not e2e:
            return answer
        target = concurrency / e2e
        rate = target if rate == 0.01 else math.sqrt(rate * target)
        answer = cli.predict([*base, "--requests-per-s", f"{rate:.6g}"])
    return answer


def serve_load(row: dict[str, str], base: list[str]) -> tuple[cli.Answer, str]:
    """The row's load as this build can take it, and how it was given (each fallback is named)."""
    loop, osl = row["loop"], int(row["osl"])
    if loop == "static":
        answer = cli.predict([*base, "--batch-size", row["batch"]])
        if answer.data is not None:
            return answer, "--batch-size (static batch)"
        loop, row = "closed", {**row, "concurrency": row["batch"]}
    if loop == "closed":
        prompts = row.get("num_prompts", "").strip()
        if prompts and cli.has_flag("--num-prompts"):  # the run's N requests through its clients, all counted
            args = [*base, "--concurrency", row["concurrency"], "--num-prompts", prompts]
            answer = cli.predict(args)
            if answer.data is not None:
                return answer, "--concurrency with --num-prompts (every request counted)"
        if cli.has_flag("--concurrency"):
            return cli.predict([*base, "--concurrency", row["concurrency"]]), "--concurrency"
        return closed_by_littles_law(base, int(row["concurrency"]), osl), "Little's law on --requests-per-s"
    if loop == "offline":
        prompts = row.get("num_prompts", "").strip()
        if prompts and cli.has_flag("--num-prompts"):  # a burst: every prompt sent at once
            return cli.predict([*base, "--num-prompts", prompts]), "--num-prompts (a burst at t=0)"
        answer = cli.predict([*base, "--requests-per-s", "inf"])
        if answer.data is not None:
            return answer, "--requests-per-s inf"
        return cli.predict([*base, "--requests-per-s", "1e6"]), "--requests-per-s 1e6 (saturating)"
    prompts = row.get("num_prompts", "").strip()
    if prompts and cli.has_flag("--num-prompts"):  # a run of N requests at the rate, its drain included
        args = [*base, "--requests-per-s", row["request_rate"], "--num-prompts", prompts]
        answer = cli.predict(args)
        if answer.data is not None:
            return answer, "--requests-per-s with --num-prompts (a finite run, every request counted)"
    return cli.predict([*base, "--requests-per-s", row["request_rate"]]), "--requests-per-s"


@dataclass(frozen=True, slots=True)
class ServeResult:
    row: dict[str, str]
    mode: str
    answer: cli.Answer
    how: str


def run_serving(row: dict[str, str], mode: str) -> ServeResult:
    answer, how = serve_load(row, serving_base(row, mode))
    return ServeResult(row, mode, answer, how)


STATS = {"ttft_ms": ("ttft_stat", "ttft_ms"), "tpot_ms": ("tpot_stat", "tpot_ms")}
"""The column stating which statistic a latency is (mean, median, ...), and serving_load's key for it."""


def as_published(
    row: dict[str, str], column: str, data: dict, get: Callable[[dict], float | None]
) -> float | None:
    """The tool's figure as the source defines its own: the simulated requests' mean where the row states a
    mean (serving_load), else the P50."""
    stat_column, key = STATS.get(column, ("", ""))
    if stat_column and row.get(stat_column, "").strip().lower().startswith("mean"):
        mean = ((data.get("serving_load") or {}).get(key) or {}).get("mean")
        if isinstance(mean, int | float):
            return float(mean)
    return get(data)


def _metric(results: Sequence[ServeResult], column: str, get: Callable[[dict], float | None]) -> list[Scored]:
    out = []
    for r in results:
        if not r.row.get(column):
            continue
        value = as_published(r.row, column, r.answer.data, get) if r.answer.data is not None else None
        lo, hi = (
            cli.band(r.answer.data, "throughput")
            if r.answer.data and column == "output_tok_s"
            else (None, None)
        )
        out.append(
            Scored(r.row["id"], r.row["source_id"], r.row["family"], float(r.row[column]), value, lo, hi)
        )
    return out


SERVING_METRICS: dict[str, tuple[str, Callable[[dict], float | None]]] = {
    "output tok/s": ("output_tok_s", lambda d: cli.p50(d, "throughput")),
    "TTFT ms": ("ttft_ms", lambda d: cli.p50(d, "serving_ttft_ms")),
    "TPOT/ITL ms": ("tpot_ms", lambda d: cli.p50(d, "serving_tpot_ms")),
}


def load_band(row: dict[str, str]) -> str:
    """The row's load as the TTFT clusters group it: one request (a client, a batch of 1, at most 1 req/s),
    light (at most 16), heavy (more, or a burst: every prompt at once)."""
    if row["loop"] == "offline":
        return "heavy"
    stated = row.get("concurrency") or row.get("batch") or row.get("request_rate") or ""
    try:
        load = float(stated)
    except ValueError:
        return "heavy"
    return "one" if load <= 1 else "light" if load <= 16 else "heavy"


def engine_of(row: dict[str, str]) -> str:
    """The row's engine as stated, or 'tool' where the source's harness is not a catalogue engine."""
    return row.get("engine", "").strip() or "tool"


def ttft_clusters(results: Sequence[ServeResult]) -> list[tuple[str, list[Scored]]]:
    """The TTFT rows as published, grouped by loop x engine x load band, and by GPU: which mechanism a
    cluster misses shows in its P50/measured (docs/serving.md, Stop 43 (ttft44))."""
    get = SERVING_METRICS["TTFT ms"][1]
    rows = [r for r in results if r.mode == "stated" and r.row.get("ttft_ms")]
    keys: list[tuple[str, Callable[[dict[str, str]], str]]] = [
        ("", lambda row: f"{row['loop']} {engine_of(row)} {load_band(row)}"),
        ("gpu ", lambda row: row["gpu"]),
    ]
    out = []
    for prefix, key in keys:
        for name in sorted({key(r.row) for r in rows}):
            out.append((prefix + name, _metric([r for r in rows if key(r.row) == name], "ttft_ms", get)))
    return out


def print_ttft_clusters(results: Sequence[ServeResult]) -> None:
    print("\n-- TTFT as published by loop, engine and load (one / light <= 16 / heavy), and by GPU --")
    print(HEADER)
    for name, scored in ttft_clusters(results):
        print(line(f"TTFT {name}", scored, with_baseline=False))


def print_serving(results: Sequence[ServeResult], detail: bool) -> None:
    print(
        "\n== Serving: held-out published runs (the tool's figure as the published one is defined: the"
        " simulated requests' mean where the source states a mean, else the P50) =="
    )
    for mode in MODES:
        rows = [r for r in results if r.mode == mode]
        print(
            "\n-- "
            + ("as published (engine, TP held)" if mode == "stated" else "as typed (tool picks engine, TP)")
            + " --"
        )
        print(HEADER)
        for name, (column, get) in SERVING_METRICS.items():
            for loop in sorted({r.row["loop"] for r in rows}):
                scored = _metric([r for r in rows if r.row["loop"] == loop], column, get)
                if scored:
                    print(line(f"{name} {loop}", scored, with_baseline=False))
            print(line(f"{name} ALL", _metric(rows, column, get), with_baseline=False))
        single = [r for r in rows if "1" in (r.row.get("concurrency"), r.row.get("batch"))]
        print(
            line(
                "TPOT/ITL ms at one request",
                _metric(single, "tpot_ms", SERVING_METRICS["TPOT/ITL ms"][1]),
                False,
            )
        )
        for source in sorted({r.row["source_id"] for r in rows}):
            scored = _metric(
                [r for r in rows if r.row["source_id"] == source],
                "output_tok_s",
                SERVING_METRICS["output tok/s"][1],
            )
            print(line(f"  tok/s source {source}", scored, with_baseline=False))
    hows = sorted({(r.row["loop"], r.how) for r in results})
    print("\nload given as: " + "; ".join(f"{loop} -> {how}" for loop, how in hows))
    _print_refusals([(r.row["id"], r.mode, r.answer) for r in results], detail)
    if detail:
        for r in results:
            d = r.answer.data or {}
            got = {
                name: as_published(r.row, column, d, get) if d else None
                for name, (column, get) in SERVING_METRICS.items()
            }
            shown = "  ".join(f"{k} {v:.1f}" if v is not None else f"{k} -" for k, v in got.items())
            print(
                f"  {r.row['id']:12} {r.mode:6} measured tok/s {r.row['output_tok_s']:>8}"
                f" ttft {r.row['ttft_ms'] or '-':>8}"
                f" tpot {r.row['tpot_ms'] or '-':>6} | tool {shown}"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="print every row and every refusal")
    parser.add_argument("--only", choices=("training", "serving"), help="run one half")
    parser.add_argument(
        "--ttft-clusters", action="store_true", help="also print the TTFT rows by loop, engine, load and GPU"
    )
    parser.add_argument(
        "--runs",
        default=DEFAULT_RUNS,
        help="run set: benchmarks/<RUNS>_training_runs.csv and _serving_runs.csv "
        "(default heldout; heldout2 .. heldout10); with --only, only that half's file is needed",
    )
    args = parser.parse_args(argv)
    training_csv, serving_csv = run_files(args.runs)
    halves = {"training": (training_csv,), "serving": (serving_csv,)}
    needed = halves.get(args.only, (training_csv, serving_csv))
    missing = [p.name for p in needed if not p.is_file()]
    if missing:
        sets = sorted(p.name.removesuffix("_training_runs.csv") for p in HERE.glob("*_training_runs.csv"))
        accepted = ", ".join(sets)
        print(f"error: --runs {args.runs!r}: no {', '.join(missing)} in benchmarks/; accepted: {accepted}")
        return 2
    print(f"run set: {args.runs} ({', '.join(p.name for p in needed)})")
    if args.only != "serving":
        rows = read_rows(training_csv)
        print_training([run_training(row, mode) for mode in MODES for row in rows], args.detail)
    if args.only != "training":
        rows = read_rows(serving_csv)
        results = [run_serving(row, mode) for mode in MODES for row in rows]
        print_serving(results, args.detail)
        if args.ttft_clusters:
            print_ttft_clusters(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
