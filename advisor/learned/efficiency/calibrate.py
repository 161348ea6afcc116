"""Provides the calibration store: a user's measured runs validated, stored under a lock, refitted on."""

from __future__ import annotations

import csv
import io
import math
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from advisor.catalog.benchmarks import COLUMNS, BenchmarkRow
from advisor.catalog.loader import Knowledge
from advisor.catalog.stacks import shipped_stacks
from advisor.catalog.userdata import keep_copy, locked, move_aside, read_stored_text, warn, write_text_atomic
from advisor.learned.efficiency.dataset import build_dataset
from advisor.learned.efficiency.features import Sample
from advisor.learned.efficiency.gbdt import ExportedModel
from advisor.learned.efficiency.learned import ARTIFACT
from advisor.learned.efficiency.runs import Run, run_of_row
from advisor.question.checks import Bound, has_controls, in_bound, read_input_text, shown
from advisor.question.errors import AdvisorError, InputError
from advisor.question.values import value_type

RUNS = "runs.csv"
LOCK = "calibration"
# Optional columns of a user's runs: the stated configuration (as `--tp` ... `--stack` take it).
CONFIG_COLUMNS = ("stack", "tp", "pp", "cp", "ep", "zero", "recompute", "global_batch", "engine")
# Every stack of knowledge/training_stacks.toml (the `--stack` values and the stacks of the measured runs).
STACKS_ACCEPTED = tuple(shipped_stacks())
# The user's own runs outweigh the public benchmarks: they measure the user's software and cluster.
USER_WEIGHT = 5.0
MAX_CSV_BYTES = 8 << 20
# Numeric columns and what each accepts; empty optional cells are left to the schema.
NUMERIC = {
    "count": Bound(1, 100_000, integer=True),
    "nodes": Bound(1, 100_000, integer=True),
    "batch_per_gpu": Bound(0, 1e6, lo_open=True),
    "seq_len": Bound(0, 1 << 22, integer=True),
    "throughput": Bound(0, 1e12, lo_open=True),
    "grad_accum": Bound(1, 1e6, integer=True),
    "reported_mfu": Bound(0, 1, lo_open=True),
}


def _check_numbers(record: dict[str, str]) -> None:
    values = {c: in_bound(record[c].strip(), c, b) for c, b in NUMERIC.items() if record[c].strip()}
    if values.get("nodes", 0) > values.get("count", math.inf):
        raise InputError(f"nodes={record['nodes']!r}: more nodes than GPUs (count={record['count']!r})")


def _row(knowledge: Knowledge, raw: dict, name: str, line: int) -> BenchmarkRow | str:
    """One CSV record as a validated row, or the one-line message saying why it is not one."""
    if raw.get(None):
        return f"{name}:{line}: {len(raw[None])} more field(s) than the {len(COLUMNS)} columns"
    record = {c: (raw.get(c) or "") for c in COLUMNS}
    bad = next((c for c in COLUMNS if has_controls(record[c])), None)
    if bad:
        return f"{name}:{line}: {bad}={shown(record[bad])}: contains control characters"
    if "@" not in record["source"] and not record["source"].startswith("user:"):
        record["source"] = f"user:{name}" + (
            f" {record['source'].strip()}" if record["source"].strip() else ""
        )
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
    rows, _, errors = validate_runs(knowledge, text, name)
    return rows, errors


def validate_runs(
    knowledge: Knowledge, text: str, name: str
) -> tuple[list[BenchmarkRow], list[dict[str, object]], list[str]]:
    """Every valid row with its optional configuration columns, and one message per bad row."""
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    try:
        fields = [f.strip() for f in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise InputError(f"{name}: not a CSV file ({exc})") from exc
    reader.fieldnames = fields
    missing = [c for c in COLUMNS if c not in fields]
    if missing:
        raise InputError(
            f"{name}: missing column(s) {', '.join(missing)}; the schema is: {', '.join(COLUMNS)}"
        )
    rows: list[BenchmarkRow] = []
    configs: list[dict[str, object]] = []
    errors: list[str] = []
    try:
        for raw in reader:
            result = _row(knowledge, raw, name, reader.line_num)
            config, problem = _config_of(raw) if not isinstance(result, str) else ({}, "")
            if isinstance(result, str) or problem:
                errors.append(result if isinstance(result, str) else f"{name}:{reader.line_num}: {problem}")
                continue
            rows.append(result)
            configs.append(config)
    except csv.Error as exc:
        errors.append(f"{name}:{reader.line_num}: not valid CSV ({exc})")
    return rows, configs, errors


def _config_of(raw: dict[str, str]) -> tuple[dict[str, object], str]:
    """The optional configuration columns of one row, or what is wrong with one of them."""
    out: dict[str, object] = {}
    for col in CONFIG_COLUMNS:
        value = (raw.get(col) or "").strip()
        if not value:
            continue
        if col == "engine":
            return {}, (
                f"engine={value!r}: serving runs are not calibrated yet; give training runs "
                "(the serving model learns from knowledge/serving_benchmarks.csv)"
            )
        if col == "stack":
            if value not in STACKS_ACCEPTED:
                return {}, f"stack={value!r}: accepted {', '.join(STACKS_ACCEPTED)}"
            out[col] = value
        elif col == "recompute":
            if value not in ("none", "selective", "full"):
                return {}, f"recompute={value!r}: accepted none, selective, full"
            out[col] = value
        else:
            # ASCII digits only: str.isdigit also takes superscripts ("²") that int() refuses.
            ok = value.isascii() and value.isdigit() and len(value) <= 9
            ok = ok and (int(value) <= 3 if col == "zero" else int(value) >= 1)
            if not ok:
                return {}, f"{col}={value!r}: accepted " + (
                    "0, 1, 2 or 3" if col == "zero" else "a whole number >= 1"
                )
            out[col] = int(value)
    return out, ""


def runs_of(rows: list[BenchmarkRow], configs: list[dict[str, object]]) -> list[Run]:
    """The user's rows as runs, with their stated configuration (stack, layout, global batch) where given."""
    out = []
    for row, cfg in zip(rows, configs, strict=True):
        run = run_of_row(row, str(cfg.get("stack") or "") or None)
        # Values were checked by the config parser (whole numbers, a stack name), so Any is what they are
        # here.
        fields: dict[str, Any] = {
            k: v for k, v in cfg.items() if k in ("tp", "pp", "cp", "ep", "zero", "recompute", "global_batch")
        }
        out.append(replace(run, **fields) if fields else run)
    return out


def _errors(model: ExportedModel, samples: list[Sample]) -> list[float]:
    return [
        abs(min(math.exp(model.predict_log(s.features)), 1.0) * s.sol - s.row.throughput) / s.row.throughput
        for s in samples
    ]


def stored_runs(knowledge: Knowledge, folder: Path) -> tuple[list[BenchmarkRow], list[dict[str, object]]]:
    """The runs stored so far. Rows that no longer validate are kept in a copy of the file, never dropped
    silently; a file that is not a runs table at all is moved aside. Call with the calibration lock held."""
    path = folder / RUNS
    text = read_stored_text(path)
    if text is None:
        return [], []
    try:
        rows, configs, errors = validate_runs(knowledge, text, RUNS)
    except InputError as exc:
        move_aside(path, str(exc))
        return [], []
    if errors:
        for e in errors:
            warn(f"stored run left out: {e}")
        if keep_copy(path, f"{len(errors)} stored run(s) no longer validate and are left out") is not None:
            write_text_atomic(
                path, _runs_csv(rows, configs)
            )  # the copy holds them; later reads need not warn
    return rows, configs


def _runs_csv(rows: list[BenchmarkRow], configs: list[dict[str, object]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=(*COLUMNS, *CONFIG_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for r, cfg in zip(rows, configs, strict=True):
        writer.writerow({**{c: ("" if v is None else v) for c, v in r.model_dump().items()}, **cfg})
    return out.getvalue()


@value_type(slots=True)
class Refit:
    """What one calibration did: runs stored, and the error on the new runs before and after the refit."""

    folder: Path
    stored: int
    new: int
    samples: int
    err_before: tuple[float, ...]
    err_after: tuple[float, ...]
    before_name: str
    model_rows: int

    def median(self, errors: tuple[float, ...]) -> float:
        """Median of one error list."""
        return statistics.median(errors)


def reset_calibration(folder: Path) -> tuple[list[str], list[str]]:
    """Remove the stored runs and model: (names removed, names of files set aside earlier that are kept)."""
    with locked(LOCK):
        removed = [p for p in (folder / RUNS, folder / ARTIFACT) if p.is_file()]
        for path in removed:
            path.unlink()
        kept = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if folder.is_dir() and not kept:
            folder.rmdir()
    return [p.name for p in removed], kept


def list_runs(knowledge: Knowledge, folder: Path) -> list[BenchmarkRow]:
    """The stored runs (read under the lock)."""
    with locked(LOCK):
        rows, _ = stored_runs(knowledge, folder)
    return rows


def read_new_runs(
    knowledge: Knowledge, file: str
) -> tuple[list[BenchmarkRow], list[dict[str, object]], list[str]]:
    """The runs of a user's CSV with their configuration columns, and one message per bad row."""
    text = read_input_text(file, "calibrate", MAX_CSV_BYTES)
    return validate_runs(knowledge, text, Path(file).name)


def calibrate(
    knowledge: Knowledge, folder: Path, new: list[BenchmarkRow], configs: list[dict[str, object]]
) -> tuple[Refit, list[tuple[str, str]]]:
    """Store the new runs and refit; (what was done, the runs that could not be modelled and why).

    One calibration at a time: the stored runs are read, merged, refitted on and written under the lock, so
    parallel runs queue instead of overwriting each other's runs."""
    data = build_dataset(knowledge, runs_of(new, configs))
    if not data.samples:
        raise AdvisorError("none of the rows can be modelled; nothing was stored")
    with locked(LOCK):
        return _merge_and_refit(knowledge, folder, (new, configs), data.samples), list(data.skipped)


def _merge_and_refit(
    knowledge: Knowledge,
    folder: Path,
    given: tuple[list[BenchmarkRow], list[dict[str, object]]],
    samples: list[Sample],
) -> Refit:
    from advisor.learned.efficiency.learned import load_learned
    from advisor.learned.efficiency.prior import PriorEfficiency
    from advisor.learned.efficiency.train import train

    previous, prev_configs = stored_runs(knowledge, folder)
    keys = {r.model_dump_json() for r in previous}
    fresh = [(r, c) for r, c in zip(*given, strict=True) if r.model_dump_json() not in keys]
    merged = previous + [r for r, _ in fresh]
    merged_configs = prev_configs + [c for _, c in fresh]
    before = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    model, _, _ = train(knowledge, runs_of(merged, merged_configs), USER_WEIGHT, with_cv=False)
    write_text_atomic(folder / RUNS, _runs_csv(merged, merged_configs))
    write_text_atomic(folder / ARTIFACT, model.to_json())
    return Refit(
        folder=folder,
        stored=len(merged),
        new=len(merged) - len(previous),
        samples=len(samples),
        err_before=tuple(_errors(before.model, samples)) if before else (),
        err_after=tuple(_errors(model, samples)),
        before_name=before.name if before else "",
        model_rows=model.rows,
    )
