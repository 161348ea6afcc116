"""Provides `gpu-advisor calibrate`: validate a user's measured runs, store them, refit, report the gain."""

from __future__ import annotations

import argparse
import csv
import io
import math
import shutil
import statistics
import sys
from pathlib import Path

from pydantic import ValidationError

from advisor.catalog.benchmarks import COLUMNS, BenchmarkRow
from advisor.catalog.loader import Knowledge
from advisor.errors import AdvisorError, InputError
from advisor.efficiency.dataset import build_dataset
from advisor.efficiency.features import Sample
from advisor.efficiency.gbdt import ExportedModel
from advisor.efficiency.learned import ARTIFACT, calibration_dir
from advisor.userdata import write_text_atomic

RUNS = "runs.csv"
# The user's own runs outweigh the public benchmarks: they measure the user's software and cluster.
USER_WEIGHT = 5.0


def validate_rows(knowledge: Knowledge, text: str, name: str) -> tuple[list[BenchmarkRow], list[str]]:
    """Every valid row, and one message per bad row (line, field, value, what is accepted)."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{name}: missing column(s) {', '.join(missing)}; the schema is: {', '.join(COLUMNS)}")
    rows: list[BenchmarkRow] = []
    errors: list[str] = []
    for line, raw in enumerate(reader, start=2):
        record = {c: raw.get(c, "") for c in COLUMNS}
        if not record["source"].strip() or "@" not in record["source"]:
            record["source"] = f"user:{name}" + (f" {record['source'].strip()}" if record["source"].strip() else "")
        try:
            row = BenchmarkRow.model_validate(record)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            errors.append(f"{name}:{line}: {field}={record.get(field, '')!r}: {err['msg']}")
            continue
        try:
            gpu = knowledge.gpu(row.gpu)
            model = knowledge.model(row.workload)
        except InputError as exc:
            errors.append(f"{name}:{line}: {exc}")
            continue
        unit = model.throughput_unit or "tokens/s"
        if row.unit != unit:
            errors.append(f"{name}:{line}: unit={row.unit!r}: {model.id} is measured in {unit!r}")
            continue
        rows.append(row.model_copy(update={"gpu": gpu.id, "workload": model.id}))
    return rows, errors


def _errors(model: ExportedModel, samples: list[Sample]) -> list[float]:
    return [abs(min(math.exp(model.predict_log(s.features)), 1.0) * s.sol - s.row.throughput) / s.row.throughput
            for s in samples]


def _read_runs(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def calibrate_cli(args: argparse.Namespace) -> int:
    """Add the runs in FILE to the user's calibration set and refit; --reset removes it."""
    folder = calibration_dir()
    if args.reset:
        if args.file:
            raise InputError("--reset takes no FILE")
        existed = folder.exists()
        shutil.rmtree(folder, ignore_errors=True)
        print(f"removed {folder}" if existed else "no calibration to remove")
        return 0
    if not args.file:
        raise InputError("give a CSV of measured runs (columns: " + ", ".join(COLUMNS) + "), or --reset")
    from advisor.catalog import load_knowledge
    from advisor.efficiency.learned import load_learned
    from advisor.efficiency.prior import PriorEfficiency
    from advisor.efficiency.train import train

    knowledge = load_knowledge()
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{args.file}: cannot read ({exc})") from exc
    new, errors = validate_rows(knowledge, text, path.name)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        raise InputError(f"{len(errors)} bad row(s) in {args.file}; nothing was stored. Fix them and run again")
    if not new:
        raise InputError(f"{args.file}: no rows")
    previous, _ = validate_rows(knowledge, _read_runs(folder / RUNS), RUNS) if (folder / RUNS).is_file() else ([], [])
    keys = {r.model_dump_json() for r in previous}
    merged = previous + [r for r in new if r.model_dump_json() not in keys]
    data = build_dataset(knowledge, new)
    if data.skipped:
        for row, why in data.skipped:
            print(f"skipped {row.workload} on {row.gpu} x{row.count}: {why}", file=sys.stderr)
    if not data.samples:
        raise AdvisorError("none of the rows can be modelled; nothing was stored")
    before = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    print(f"refitting on {len(merged)} of your runs (weight {USER_WEIGHT:g}) and the shipped benchmarks ...",
          file=sys.stderr)
    model, meta, _ = train(knowledge, merged, USER_WEIGHT, with_cv=False)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in merged:
        writer.writerow({c: ("" if v is None else v) for c, v in r.model_dump().items()})
    write_text_atomic(folder / RUNS, out.getvalue())
    write_text_atomic(folder / ARTIFACT, model.to_json())
    err_before = _errors(before.model, data.samples) if before else []
    err_after = _errors(model, data.samples)
    print(f"stored {len(merged)} runs in {folder}")
    if err_before:
        print(f"error on your {len(data.samples)} new runs: median {statistics.median(err_before):.1%} before, "
              f"{statistics.median(err_after):.1%} after (max {max(err_before):.1%} -> {max(err_after):.1%})")
    print("predictions now say 'calibration on N of your runs'; undo with: gpu-advisor calibrate --reset")
    return 0
