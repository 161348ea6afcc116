"""Provides `gpu-advisor calibrate`: validate a user's measured runs, store them, refit, report the gain."""

from __future__ import annotations

import argparse
import csv
import io
import math
import shutil
import statistics
import sys
from dataclasses import replace
from pathlib import Path

from pydantic import ValidationError

from advisor.catalog.benchmarks import COLUMNS, BenchmarkRow
from advisor.catalog.loader import Knowledge
from advisor.errors import AdvisorError, InputError
from advisor.efficiency.dataset import build_dataset
from advisor.efficiency.features import Sample
from advisor.efficiency.gbdt import ExportedModel
from advisor.efficiency.learned import ARTIFACT, calibration_dir
from advisor.efficiency.runs import Run, run_of_row
from advisor.userdata import write_text_atomic

RUNS = "runs.csv"
# Optional columns of a user's runs: the stated configuration (as `--tp` ... `--stack` take it).
CONFIG_COLUMNS = ("stack", "tp", "pp", "cp", "ep", "zero", "recompute", "global_batch", "engine")
STACKS_ACCEPTED = ("megatron", "torchtitan", "deepspeed", "hf", "composer", "unsloth", "pytorch-fsdp", "ngc-pytorch",
                   "pytorch")
# The user's own runs outweigh the public benchmarks: they measure the user's software and cluster.
USER_WEIGHT = 5.0


def validate_rows(knowledge: Knowledge, text: str, name: str) -> tuple[list[BenchmarkRow], list[str]]:
    """Every valid row, and one message per bad row (line, field, value, what is accepted)."""
    rows, _, errors = validate_runs(knowledge, text, name)
    return rows, errors


def validate_runs(knowledge: Knowledge, text: str, name: str
                  ) -> tuple[list[BenchmarkRow], list[dict[str, object]], list[str]]:
    """Every valid row with its optional configuration columns, and one message per bad row."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{name}: missing column(s) {', '.join(missing)}; the schema is: {', '.join(COLUMNS)}")
    rows: list[BenchmarkRow] = []
    errors: list[str] = []
    configs: list[dict[str, object]] = []
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
        config, problem = _config_of(raw)
        if problem:
            errors.append(f"{name}:{line}: {problem}")
            continue
        rows.append(row.model_copy(update={"gpu": gpu.id, "workload": model.id}))
        configs.append(config)
    return rows, configs, errors


def _config_of(raw: dict[str, str]) -> tuple[dict[str, object], str]:
    """The optional configuration columns of one row, or what is wrong with one of them."""
    out: dict[str, object] = {}
    for col in CONFIG_COLUMNS:
        value = (raw.get(col) or "").strip()
        if not value:
            continue
        if col == "engine":
            return {}, (f"engine={value!r}: serving runs are not calibrated yet; give training runs "
                        "(the serving model learns from knowledge/serving_benchmarks.csv)")
        if col == "stack":
            if value not in STACKS_ACCEPTED:
                return {}, f"stack={value!r}: accepted {', '.join(STACKS_ACCEPTED)}"
            out[col] = value
        elif col == "recompute":
            if value not in ("none", "selective", "full"):
                return {}, f"recompute={value!r}: accepted none, selective, full"
            out[col] = value
        else:
            ok = value.isdigit() and (int(value) <= 3 if col == "zero" else int(value) >= 1)
            if not ok:
                return {}, f"{col}={value!r}: accepted " + ("0, 1, 2 or 3" if col == "zero" else "a whole number >= 1")
            out[col] = int(value)
    return out, ""


def runs_of(rows: list[BenchmarkRow], configs: list[dict[str, object]]) -> list[Run]:
    """The user's rows as runs, with their stated configuration (stack, layout, global batch) where given."""
    out = []
    for row, cfg in zip(rows, configs):
        run = run_of_row(row, str(cfg.get("stack") or "") or None)
        fields = {k: v for k, v in cfg.items() if k in ("tp", "pp", "cp", "ep", "zero", "recompute", "global_batch")}
        out.append(replace(run, **fields) if fields else run)
    return out


def _errors(model: ExportedModel, samples: list[Sample]) -> list[float]:
    # Each figure: |predicted - measured| / measured on the user's new runs (measured = the user's CSV).
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
    new, new_configs, errors = validate_runs(knowledge, text, path.name)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        raise InputError(f"{len(errors)} bad row(s) in {args.file}; nothing was stored. Fix them and run again")
    if not new:
        raise InputError(f"{args.file}: no rows")
    previous, prev_configs, _ = validate_runs(knowledge, _read_runs(folder / RUNS), RUNS) \
        if (folder / RUNS).is_file() else ([], [], [])
    keys = {r.model_dump_json() for r in previous}
    fresh = [(r, c) for r, c in zip(new, new_configs) if r.model_dump_json() not in keys]
    merged = previous + [r for r, _ in fresh]
    merged_configs = prev_configs + [c for _, c in fresh]
    data = build_dataset(knowledge, runs_of(new, new_configs))
    if data.skipped:
        for label, why in data.skipped:
            print(f"skipped {label}: {why}", file=sys.stderr)
    if not data.samples:
        raise AdvisorError("none of the rows can be modelled; nothing was stored")
    before = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    print(f"refitting on {len(merged)} of your runs (weight {USER_WEIGHT:g}) and the shipped benchmarks ...",
          file=sys.stderr)
    model, meta, _ = train(knowledge, runs_of(merged, merged_configs), USER_WEIGHT, with_cv=False)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS + CONFIG_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r, cfg in zip(merged, merged_configs):
        writer.writerow({**{c: ("" if v is None else v) for c, v in r.model_dump().items()}, **cfg})
    write_text_atomic(folder / RUNS, out.getvalue())
    write_text_atomic(folder / ARTIFACT, model.to_json())
    err_before = _errors(before.model, data.samples) if before else []
    err_after = _errors(model, data.samples)
    print(f"stored {len(merged)} runs in {folder}")
    if err_before and before is not None:
        print(f"error on your {len(data.samples)} new runs (measured: {path.name}):")
        print(f"  before: median {statistics.median(err_before):.1%}, max {max(err_before):.1%} - predicted by "
              f"{before.name}")
        print(f"  after:  median {statistics.median(err_after):.1%}, max {max(err_after):.1%} - predicted by the "
              f"refit on {model.rows:,} runs ({len(merged)} yours, weight {USER_WEIGHT:g}; the rest "
              "knowledge/benchmarks.csv and knowledge/llm_benchmarks.csv)")
    print("predictions now say 'calibration on N of your runs'; undo with: gpu-advisor calibrate --reset")
    return 0
