"""Prints the measured-operation tables' coverage per GPU and link (rows, the basis of a typical answer, the
achieved/peak ratio) and the loader's cost per call, as CPU time (process_time: these machines are shared).

    .venv/bin/python benchmarks/bench_operations.py            # everything
    .venv/bin/python benchmarks/bench_operations.py --cost     # only the loader's cost
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable

from advisor.catalog import operations as ops
from advisor.catalog.loader import load_knowledge
from advisor.catalog.operations import links, rates, tables

GEMM = (8192, 8192, 8192)
"""A large square GEMM: the achievable matmul ceiling."""
DECODE = (16, 4096, 4096)
"""A decode step's projection at a batch of 16 sequences: latency-bound."""
ATTENTION = {"seq_len": 8192, "heads": 32, "kv_heads": 8, "head_dim": 128, "causal": True}


def _short(basis: str) -> str:
    for word, short in (("measured", "meas"), ("interpolated", "interp"), ("extrapolated", "extrap")):
        if basis == word:
            return short
    if basis.startswith("scaled from"):
        return "~" + basis.removeprefix("scaled from ").split(",")[0].split(" ")[0]
    return "datasheet"


def coverage() -> None:
    gpus = load_knowledge().gpus
    counts = {name: Counter(r["gpu"] for r in ops.table(name)) for name in ("gemm", "attention", "memory")}
    print(
        "Per GPU: rows of each table; a large bf16 GEMM, a decode GEMM, causal attention fwd and bwd at 8k,"
    )
    print("memory bandwidth: achieved/datasheet-peak ratio and basis (~gpu: scaled from that GPU)\n")
    head = f"{'gpu':<20}{'gemm':>6}{'attn':>6}{'mem':>5}  {'gemm 8k^3':<19}{'decode m=16':<19}"
    print(head + f"{'attn fwd':<19}{'attn bwd':<19}{'memory':<19}")
    measured = {"gemm": 0, "attention": 0, "memory": 0}
    for g in gpus:
        peak = ops.peak_tflops(g, rates._runnable(g, "bf16")) or 1.0
        big = ops.gemm_tflops(g.id, "bf16", *GEMM)
        decode = ops.gemm_tflops(g.id, "bf16", *DECODE)
        fwd = ops.attention_tflops(g.id, "bf16", **ATTENTION, pass_="fwd")
        bwd = ops.attention_tflops(g.id, "bf16", **ATTENTION, pass_="bwd")
        mem = ops.memory_gbs(g.id)
        cells = [
            f"{m.value / p:5.2f} {_short(m.basis):<13}"
            for m, p in ((big, peak), (decode, peak), (fwd, peak), (bwd, peak), (mem, g.memory_bw_gbs))
        ]
        row = (
            f"{g.id:<20}{counts['gemm'][g.id]:>6}{counts['attention'][g.id]:>6}{counts['memory'][g.id]:>5}  "
        )
        print(row + "".join(cells))
        for name in measured:
            measured[name] += counts[name][g.id] > 0
    print(
        f"\n{len(gpus)} catalogued GPUs; with rows of their own: "
        + ", ".join(f"{k} {v}" for k, v in measured.items())
    )


def link_coverage() -> None:
    print("\nPer link key: rows; all-reduce bus bandwidth at 256 MiB / nominal (8 GPUs in a server, 16 on 2)")
    rows = Counter(r["link"] for r in ops.table("collectives"))
    for link in sorted(links._link_nominals()):
        across = links._between_servers(link)
        got = ops.collective_busbw_gbs("all_reduce", link, 16 if across else 8, 2 if across else 1, 2**28)
        nominal = ops.nominal_gbs(link) or 1.0
        print(
            f"  {link:<16}{rows[link]:>5} rows {got.value:8.1f} GB/s {got.value / nominal:5.2f}  {got.basis}"
        )


def agreement() -> None:
    """Where two independent sources measured the same thing: one source's grid read at the other's rows."""
    print("\nCross-source agreement (a grid of one source at another source's rows; ratio grid/row)")
    mamf = [r for r in ops.table("gemm") if "ml-engineering" in r["source"]]
    for r in mamf:
        grid_rows = [x for x in tables._gpu_rows("gemm", r["gpu"]) if x["dtype"] == r["dtype"] and x is not r]
        grid = tables._grid(grid_rows, ("m", "n", "k"), "tflops", (1.0, 1.0, 1.0), True)
        if grid is not None:
            value, basis, _ = grid.at((r["m"], r["n"], r["k"]))
            shape = f"{r['m']:.0f}x{r['n']:.0f}x{r['k']:.0f}"
            print(
                f"  gemm {r['gpu']:<14}{r['dtype']:<5} MAMF {r['tflops']:7.1f} at {shape:<17} aiconfigurator"
                f" {value:7.1f} ({basis})  {value / r['tflops']:.2f}"
            )
    rows = [r for r in ops.table("collectives") if r["nodes"] == 1]
    for link in ("nvlink3", "nvlink4", "nvlink5"):
        aic = [r for r in rows if r["link"] == link and "aiconfigurator" in r["source"]]
        grid = tables._grid(aic, ("gpus", "nbytes"), "busbw_gbs", (0.0, 0.0), False)
        others = [r for r in rows if r["link"] == link and "aiconfigurator" not in r["source"]]
        ratios = [
            grid.at((r["gpus"], r["nbytes"]))[0] / r["busbw_gbs"]
            for r in others
            if grid and r["nbytes"] >= 2**20
        ]
        if ratios:
            print(
                f"  {link}: aiconfigurator's NCCL grid / {len(ratios)} rows of other sources (>= 1 MiB):"
                f" median {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}"
            )


def _cpu(fn: Callable[[], object], repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat


def cost() -> None:
    print("\nLoader cost (CPU time)")
    assert load_knowledge().gpus  # every command loads the catalogue before this
    ops.clear_cache()
    first = {
        "gemm, first use (parse one GPU's rows, build its grid)": lambda: ops.gemm_tflops(
            "h100-sxm", "bf16", *GEMM
        ),
        "attention, first use": lambda: ops.attention_tflops(
            "h100-sxm", "bf16", **ATTENTION, pass_="fwd_bwd"
        ),
        "collectives, first use": lambda: ops.collective_busbw_gbs("all_reduce", "nvlink4", 8, 1, 1e8),
        "memory, first use": lambda: ops.memory_gbs("h100-sxm"),
        "datasheet fallback, first use (every measured GPU's grid)": lambda: ops.gemm_tflops(
            "t4", "fp16", *GEMM
        ),
    }
    for label, fn in first.items():
        print(f"  {label:<58}{1e3 * _cpu(fn, 1):8.2f} ms")
    rng = random.Random(26)
    shapes = [
        (rng.randint(256, 65536), rng.choice((4096, 14336, 128256)), rng.choice((4096, 8192)))
        for _ in range(500)
    ]
    for gpu, label in (
        ("h100-sxm", "own grid"),
        ("h100-pcie", "scaled from a peer"),
        ("mi300x", "levelled fallback"),
    ):
        ops.gemm_tflops(gpu, "bf16", *GEMM)
        times = []
        for m, n, k in shapes:
            start = time.process_time()
            ops.gemm_tflops(gpu, "bf16", m, n, k)
            times.append(time.process_time() - start)
        print(f"  gemm, a new shape, {label:<39}{1e6 * statistics.fmean(times):8.1f} us")
    print(
        f"  gemm, a repeated call (memoised){'':<25}"
        f"{1e6 * _cpu(lambda: ops.gemm_tflops('h100-sxm', 'bf16', *GEMM), 2000):8.2f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost", action="store_true", help="only the loader's cost")
    args = parser.parse_args()
    if not args.cost:
        coverage()
        link_coverage()
        agreement()
    cost()


if __name__ == "__main__":
    main()
