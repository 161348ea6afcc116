"""Provides `gpu-advisor calibrate`: validate a user's measured runs, store them, refit, report the gain."""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import statistics
import sys
from pathlib import Path

from pydantic import ValidationError

from advisor.catalog.benchmarks import COLUMNS, BenchmarkRow
from advisor.catalog.loader import Knowledge
from advisor.checks import Bound, has_controls, in_bound, read_input_text, shown
from advisor.errors import AdvisorError, InputError
from advisor.efficiency.dataset import build_dataset
from advisor.efficiency.features import Sample
from advisor.efficiency.gbdt import ExportedModel
from advisor.efficiency.learned import ARTIFACT, calibration_dir
from advisor.userdata import keep_copy, locked, move_aside, read_stored_text, warn, write_text_atomic

RUNS = "runs.csv"
LOCK = "calibration"
# The user's own runs outweigh the public benchmarks: they measure the user's software and cluster.
USER_WEIGHT = 5.0
MAX_CSV_BYTES = 8 << 20
# Numeric columns and what each accepts; empty optional cells are left to the schema.
NUMERIC = {
    "count": Bound(1, 100_000, integer=True), "nodes": Bound(1, 100_000, integer=True),
    "batch_per_gpu": Bound(0, 1e6, lo_open=True), "seq_len": Bound(0, 1 << 22, integer=True),
    "throughput": Bound(0, 1e12, lo_open=True), "grad_accum": Bound(1, 1e6, integer=True),
    "reported_mfu": Bound(0, 1, lo_open=True),
}


def _check_numbers(record: dict[str, str]) -> None:
    values = {c: in_bound(record[c].strip(), c, b) for c, b in NUMERIC.items() if record[c].strip()}
    if values.get("nodes", 0) > values.get("count", math.inf):
        raise InputError(f"nodes={record['nodes']!r}: more nodes than GPUs (count={record['count']!r})")


def _row(knowledge: Knowledge, raw: dict, name: str, line: int) -> BenchmarkRow | str:
    """One CSV record as a validated row, or the one-line message saying why it is not one."""
    if raw.get(None):  # type: ignore[call-overload]
        return f"{name}:{line}: {len(raw[None])} more field(s) than the {len(COLUMNS)} columns"  # type: ignore[index]
    record = {c: (raw.get(c) or "") for c in COLUMNS}
    bad = next((c for c in COLUMNS if has_controls(record[c])), None)
    if bad:
        return f"{name}:{line}: {bad}={shown(record[bad])}: contains control characters"
    if "@" not in record["source"] and not record["source"].startswith("user:"):
        record["source"] = f"user:{name}" + (f" {record['source'].strip()}" if record["source"].strip() else "")
    try:
        _check_numbers(record)
        row = BenchmarkRow.model_validate(record)
    except InputError as exc:
        return f"{name}:{line}: {exc}"
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        return f"{name}:{line}: {field}={shown(record.get(field, ''))}: {err['msg']}"
    try:
        gpu = knowledge.gpu(row.gpu)
        model = knowledge.model(row.workload)
    except InputError as exc:
        return f"{name}:{line}: {exc}"
    unit = model.throughput_unit or "tokens/s"
    if row.unit != unit:
        return f"{name}:{line}: unit={shown(row.unit)}: {model.id} is measured in {unit!r}"
    return row.model_copy(update={"gpu": gpu.id, "workload": model.id})


def validate_rows(knowledge: Knowledge, text: str, name: str) -> tuple[list[BenchmarkRow], list[str]]:
    """Every valid row, and one message per bad row (line, field, value, what is accepted)."""
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    try:
        fields = [f.strip() for f in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise InputError(f"{name}: not a CSV file ({exc})") from exc
    reader.fieldnames = fields
    missing = [c for c in COLUMNS if c not in fields]
    if missing:
        raise InputError(f"{name}: missing column(s) {', '.join(missing)}; the schema is: {', '.join(COLUMNS)}")
    rows: list[BenchmarkRow] = []
    errors: list[str] = []
    try:
        for raw in reader:
            result = _row(knowledge, raw, name, reader.line_num)
            (errors if isinstance(result, str) else rows).append(result)  # type: ignore[arg-type]
    except csv.Error as exc:
        errors.append(f"{name}:{reader.line_num}: not valid CSV ({exc})")
    return rows, errors


def _errors(model: ExportedModel, samples: list[Sample]) -> list[float]:
    return [abs(min(math.exp(model.predict_log(s.features)), 1.0) * s.sol - s.row.throughput) / s.row.throughput
            for s in samples]


def stored_runs(knowledge: Knowledge, folder: Path) -> list[BenchmarkRow]:
    """The runs stored so far. Rows that no longer validate are kept in a copy of the file, never dropped
    silently; a file that is not a runs table at all is moved aside. Call with the calibration lock held."""
    path = folder / RUNS
    text = read_stored_text(path)
    if text is None:
        return []
    try:
        rows, errors = validate_rows(knowledge, text, RUNS)
    except InputError as exc:
        move_aside(path, str(exc))
        return []
    if errors:
        for e in errors:
            warn(f"stored run left out: {e}")
        if keep_copy(path, f"{len(errors)} stored run(s) no longer validate and are left out") is not None:
            write_text_atomic(path, _runs_csv(rows))  # the copy holds them; later reads need not warn again
    return rows


def _runs_csv(rows: list[BenchmarkRow]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: ("" if v is None else v) for c, v in r.model_dump().items()})
    return out.getvalue()


def _reset(folder: Path) -> int:
    with locked(LOCK):
        removed = [p for p in (folder / RUNS, folder / ARTIFACT) if p.is_file()]
        for path in removed:
            path.unlink()
        kept = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if folder.is_dir() and not kept:
            folder.rmdir()
    print(f"removed {', '.join(p.name for p in removed)} from {folder}" if removed else "no calibration to remove")
    if kept:
        print(f"kept {len(kept)} file(s) set aside earlier in {folder}: {', '.join(kept)}")
    return 0


def _list(knowledge: Knowledge, folder: Path, fmt: str) -> int:
    with locked(LOCK):
        rows = stored_runs(knowledge, folder)
    if fmt == "json":
        print(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return 0
    from advisor.cli.output import table

    if not rows:
        print(f"no stored runs in {folder}")
        return 0
    print(table(("workload", "gpu", "count", "nodes", "precision", "throughput", "unit", "source"),
                [(r.workload, r.gpu, r.count, r.nodes, r.precision, f"{r.throughput:,.6g}", r.unit,
                  shown(r.source).strip("'")) for r in rows], right=(2, 3, 5)))
    print(f"{len(rows)} run(s) in {folder / RUNS}")
    return 0


def _new_rows(knowledge: Knowledge, file: str) -> list[BenchmarkRow]:
    text = read_input_text(file, "calibrate", MAX_CSV_BYTES)
    new, errors = validate_rows(knowledge, text, Path(file).name)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        raise InputError(f"{len(errors)} bad row(s) in {shown(file)}; nothing was stored. Fix them and run again")
    if not new:
        raise InputError(f"{shown(file)}: no rows")
    return new


def calibrate_cli(args: argparse.Namespace) -> int:
    """Add the runs in FILE to the user's calibration set and refit; --list shows them; --reset removes them."""
    folder = calibration_dir()
    if args.reset or getattr(args, "list", False):
        if args.file or (args.reset and getattr(args, "list", False)):
            raise InputError("--reset and --list take no FILE and not each other")
        if args.reset:
            return _reset(folder)
    elif not args.file:
        raise InputError("give a CSV of measured runs (columns: " + ", ".join(COLUMNS) + "), --list or --reset")
    from advisor.catalog import load_knowledge

    knowledge = load_knowledge()
    if getattr(args, "list", False):
        return _list(knowledge, folder, getattr(args, "format", None) or "table")
    new = _new_rows(knowledge, args.file)
    data = build_dataset(knowledge, new)
    for row, why in data.skipped:
        print(f"skipped {row.workload} on {row.gpu} x{row.count}: {why}", file=sys.stderr)
    if not data.samples:
        raise AdvisorError("none of the rows can be modelled; nothing was stored")
    # One calibrate at a time: the stored runs are read, merged, refitted on and written under the lock, so
    # parallel runs queue instead of overwriting each other's runs.
    with locked(LOCK):
        return _merge_and_refit(knowledge, folder, new, data.samples)


def _merge_and_refit(knowledge: Knowledge, folder: Path, new: list[BenchmarkRow], samples: list[Sample]) -> int:
    from advisor.efficiency.learned import load_learned
    from advisor.efficiency.prior import PriorEfficiency
    from advisor.efficiency.train import train

    previous = stored_runs(knowledge, folder)
    keys = {r.model_dump_json() for r in previous}
    merged = previous + [r for r in new if r.model_dump_json() not in keys]
    before = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    print(f"refitting on {len(merged)} of your runs (weight {USER_WEIGHT:g}) and the shipped benchmarks ...",
          file=sys.stderr)
    model, _, _ = train(knowledge, merged, USER_WEIGHT, with_cv=False)
    write_text_atomic(folder / RUNS, _runs_csv(merged))
    write_text_atomic(folder / ARTIFACT, model.to_json())
    err_before = _errors(before.model, samples) if before else []
    err_after = _errors(model, samples)
    print(f"stored {len(merged)} runs in {folder} ({len(merged) - len(previous)} new)")
    if err_before:
        print(f"error on your {len(samples)} new runs: median {statistics.median(err_before):.1%} before, "
              f"{statistics.median(err_after):.1%} after (max {max(err_before):.1%} -> {max(err_after):.1%})")
    print("predictions now say 'calibration on N of your runs'; see them with: gpu-advisor calibrate --list; "
          "undo with: gpu-advisor calibrate --reset")
    return 0
