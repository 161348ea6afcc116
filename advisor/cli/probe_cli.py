"""Provides `gpu-advisor probe`: measures this node's operation table (GEMM, attention, copy bandwidth,
collectives) with PyTorch and stores it as a named node profile; --list shows the stored ones."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

EPILOG = """examples:
  gpu-advisor probe                      measure this node (about two minutes), store it as <gpu>-<host>
  gpu-advisor probe --name lab-h100 --quick
  gpu-advisor probe --list

Needs PyTorch with a CUDA or ROCm GPU: pip install 'gpu-advisor[probe]'. Later answers use a profile
with --profile NAME."""


def add_probe_parser(sub: argparse._SubParsersAction) -> None:
    """The `probe` command's flags."""
    p = sub.add_parser(
        "probe",
        help="measure this node's GEMM, attention, bandwidth and collectives",
        description="Measure this node's operation table with PyTorch (GEMM grid, SDPA attention, device "
        "copy bandwidth, NCCL collectives across its GPUs) in under two minutes and store it as a named node "
        "profile in the data directory.",
        epilog=EPILOG,
    )
    p.add_argument("--name", help="the profile's name (default: <gpu>-<host>)")
    p.add_argument("--quick", action="store_true", help="a shorter grid (well under a minute)")
    p.add_argument(
        "--gpus", dest="gpu_count", metavar="N", type=_count, help="GPUs the collectives span (default: all)"
    )
    p.add_argument("--force", action="store_true", help="replace a stored profile of the same name")
    p.add_argument("--list", action="store_true", help="list the stored node profiles")
    p.add_argument("--format", choices=("table", "json"), default=None, help="output format (default table)")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of GPUs (1 or more)")
    return value


def probe_cli(args: argparse.Namespace) -> int:
    """Measure and store (or, with --list, show what is stored)."""
    # Imported here: every `--help` builds this parser, and these cost it a third of its CPU.
    import datetime as dt
    import socket

    from advisor.catalog.node_profile import check_name, exists, save_operations
    from advisor.cli.output import json_text
    from advisor.question.errors import InputError

    fmt = args.format or "table"
    if args.list:
        if args.name or args.quick or args.gpu_count or args.force:
            raise InputError("--list takes no other flag but --format")
        return _list(fmt)
    if args.name is not None:
        try:
            check_name(args.name)
        except InputError as exc:
            raise InputError(f"--name: {exc}") from None
    from advisor.probe.torch_backend import open_backend  # torch is imported here, not before

    backend = open_backend()
    if args.gpu_count is not None and args.gpu_count > backend.info.count:
        raise InputError(
            f"--gpus: {args.gpu_count} is more than the {backend.info.count} GPU(s) PyTorch sees"
        )
    from advisor.catalog import load_knowledge
    from advisor.probe.run import default_name, identify, probe

    knowledge = load_knowledge()
    host = socket.gethostname()
    name = args.name or default_name(identify(backend.info, knowledge)[0], host)
    if exists(name) and not args.force:  # said before two minutes of measuring, not after
        raise InputError(f"profile {name!r} exists; pass --force to replace it, or --name another name")
    say = _progress
    say(f"probing {backend.info.count} x {backend.info.name} as profile {name!r} ...")
    payload = probe(
        backend,
        backend.info,
        knowledge,
        name=name,
        host=host,
        today=dt.date.today().isoformat(),
        quick=args.quick,
        gpus=args.gpu_count,
        say=say,
    )
    path = save_operations(name, payload, replace=args.force)
    if fmt == "json":
        print(json_text(payload, indent=1))
    else:
        print(summary(payload))
        print(f"stored in {path}; use it with --profile {name}")
    return 0


def _progress(line: str) -> None:
    """A progress line on stderr (stdout keeps the table or the JSON)."""
    print(f"gpu-advisor probe: {line}", file=sys.stderr, flush=True)


def _best(rows: Sequence[dict[str, Any]], key: str, value: str) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for row in rows:
        best[str(row[key])] = max(best.get(str(row[key]), 0.0), float(row[value]))
    return sorted(best.items())


def summary(payload: dict[str, Any]) -> str:
    """The measured table in a few lines: the best GEMM and attention per dtype/kernel, copy bandwidth,
    and each collective's bus bandwidth at its largest message; then the notes."""
    from advisor.cli.output import table

    lines = [
        f"profile {payload['name']}: {payload['gpus']} x {payload['gpu']} on {payload['host']}, "
        f"{payload['measured_on']}, torch {payload['torch']} {payload['cuda']}".rstrip()
    ]
    cells: list[tuple[str, str, str]] = []
    cells += [("gemm", dtype, f"{v:,.1f} TFLOP/s") for dtype, v in _best(payload["gemm"], "dtype", "tflops")]
    attention = [r for r in payload["attention"] if r["pass"] == "fwd_bwd"]
    cells += [("attention fwd+bwd", k, f"{v:,.1f} TFLOP/s") for k, v in _best(attention, "kernel", "tflops")]
    cells += [("memory copy", "", f"{v:,.0f} GB/s") for _, v in _best(payload["memory"], "op", "gbs")]
    largest: dict[str, dict[str, Any]] = {}
    for row in payload["collectives"]:
        if row["nbytes"] >= largest.get(row["op"], {"nbytes": 0})["nbytes"]:
            largest[row["op"]] = row
    cells += [
        (f"{op} busbw", f"{r['nbytes'] / 2**20:,.0f} MiB, {r['link']}", f"{r['busbw_gbs']:,.1f} GB/s")
        for op, r in sorted(largest.items())
    ]
    counts = ", ".join(f"{len(payload[s])} {s}" for s in ("gemm", "attention", "memory", "collectives"))
    lines += [table(("measured", "best of", "value"), cells, right=(2,)), f"rows: {counts}"]
    lines += [f"note: {n}" for n in payload.get("notes", [])]
    return "\n".join(lines)


def _list(fmt: str) -> int:
    from advisor.catalog.node_profile import list_profiles, load_profile, profiles_dir
    from advisor.cli.output import json_text, table

    found = [p for p in (load_profile(n) for n in list_profiles()) if p is not None]
    sections = ("gemm", "attention", "memory", "collectives")
    if fmt == "json":
        print(
            json_text(
                [
                    {k: v for k, v in p.items() if k not in sections} | {s: len(p[s]) for s in sections}
                    for p in found
                ],
                indent=1,
            )
        )
        return 0
    if not found:
        print(f"no node profiles in {profiles_dir()}; measure one with: gpu-advisor probe")
        return 0
    cells = [
        (p["name"], p["gpu"], p["gpus"], p["host"], p["measured_on"], *(len(p[s]) for s in sections))
        for p in found
    ]
    headers = ("name", "gpu", "gpus", "host", "measured", *sections)
    print(table(headers, cells, right=(2, 5, 6, 7, 8)))
    print(f"{len(found)} profile(s) in {profiles_dir()}")
    return 0
