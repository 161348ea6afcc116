"""Provides `gpu-advisor calibrate`: parses its arguments, calls the calibration store, prints the result."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.catalog.benchmarks import COLUMNS
from advisor.cli.output import json_text
from advisor.question.checks import shown
from advisor.question.errors import InputError

if TYPE_CHECKING:
    from advisor.catalog.loader import Knowledge


def calibrate_cli(args: argparse.Namespace) -> int:
    """Add the runs in FILE to the user's calibration set and refit; --list shows them, --reset removes
    them."""
    from advisor.learned.efficiency.learned import calibration_dir

    folder = calibration_dir()
    listing = bool(getattr(args, "list", False))
    if args.reset or listing:
        if args.file or (args.reset and listing):
            raise InputError("--reset and --list take no FILE and not each other")
    elif not args.file:
        raise InputError(
            "give a CSV of measured runs (columns: " + ", ".join(COLUMNS) + "), --list or --reset"
        )
    if args.reset:
        return _reset(folder)
    from advisor.catalog import load_knowledge

    knowledge = load_knowledge()
    if listing:
        return _list(knowledge, folder, getattr(args, "format", None) or "table")
    return _calibrate(knowledge, folder, args.file)


def _reset(folder: Path) -> int:
    from advisor.learned.efficiency.calibrate import reset_calibration

    removed, kept = reset_calibration(folder)
    print(f"removed {', '.join(removed)} from {folder}" if removed else "no calibration to remove")
    if kept:
        print(f"kept {len(kept)} file(s) set aside earlier in {folder}: {', '.join(kept)}")
    return 0


def _list(knowledge: Knowledge, folder: Path, fmt: str) -> int:
    from advisor.cli.output import table
    from advisor.learned.efficiency.calibrate import RUNS, list_runs

    rows = list_runs(knowledge, folder)
    if fmt == "json":
        print(json_text([r.model_dump(mode="json") for r in rows], indent=2))
        return 0
    if not rows:
        print(f"no stored runs in {folder}")
        return 0
    cells = [
        (
            r.workload,
            r.gpu,
            r.count,
            r.nodes,
            r.precision,
            f"{r.throughput:,.6g}",
            r.unit,
            shown(r.source).strip("'"),
        )
        for r in rows
    ]
    print(
        table(
            ("workload", "gpu", "count", "nodes", "precision", "throughput", "unit", "source"),
            cells,
            right=(2, 3, 5),
        )
    )
    print(f"{len(rows)} run(s) in {folder / RUNS}")
    return 0


def _calibrate(knowledge: Knowledge, folder: Path, file: str) -> int:
    from advisor.learned.efficiency.calibrate import USER_WEIGHT, calibrate, read_new_runs

    new, configs, errors = read_new_runs(knowledge, file)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        raise InputError(
            f"{len(errors)} bad row(s) in {shown(file)}; nothing was stored. Fix them and run again"
        )
    if not new:
        raise InputError(f"{shown(file)}: no rows")
    print(f"refitting on your runs (weight {USER_WEIGHT:g}) and the shipped benchmarks ...", file=sys.stderr)
    done, skipped = calibrate(knowledge, folder, new, configs)
    for label, why in skipped:
        print(f"skipped {label}: {why}", file=sys.stderr)
    print(f"stored {done.stored} runs in {done.folder} ({done.new} new)")
    if done.err_before:
        name = shown(Path(file).name).strip("'")
        print(f"error on your {done.samples} new runs (measured: {name}):")
        before, after = done.err_before, done.err_after
        print(
            f"  before: median {done.median(before):.1%}, max {max(before):.1%} - predicted by "
            f"{done.before_name}"
        )
        print(
            f"  after:  median {done.median(after):.1%}, max {max(after):.1%} - predicted by the refit on "
            f"{done.model_rows:,} runs ({done.stored} yours, weight {USER_WEIGHT:g}; the rest "
            "knowledge/benchmarks.csv and knowledge/llm_benchmarks.csv)"
        )
    print(
        "predictions now say 'calibration on N of your runs'; see them with: gpu-advisor calibrate --list; "
        "undo with: gpu-advisor calibrate --reset"
    )
    return 0
