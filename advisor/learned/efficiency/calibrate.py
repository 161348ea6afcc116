"""Provides the door of a user's runs CSV (today's benchmark schema): each row validated, each bad row named
(stored per profile by advisor/catalog/run_store.py, applied by advisor/learned/calibration/)."""

from __future__ import annotations

import csv
import dataclasses
import io
import math

from pydantic import ValidationError

from advisor.catalog.benchmarks import COLUMNS, BenchmarkRow, benchmark_row
from advisor.catalog.loader import Knowledge
from advisor.catalog.stacks import shipped_stacks
from advisor.question.checks import Bound, has_controls, in_bound, shown
from advisor.question.errors import InputError

# Optional columns of a user's runs: the stated configuration (as `--tp` ... `--stack` take it).
CONFIG_COLUMNS = ("stack", "tp", "pp", "cp", "ep", "zero", "recompute", "global_batch", "engine")
# Every stack of knowledge/training_stacks.toml (the `--stack` values and the stacks of the measured runs).
STACKS_ACCEPTED = tuple(shipped_stacks())
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
        row = benchmark_row(record)
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
    return dataclasses.replace(row, gpu=gpu.id, workload=model.id)


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
                f"engine={value!r}: a runs CSV holds training runs; calibrate serving from the engine's "
                "result file (vllm bench serve --save-result, SGLang bench_serving)"
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
