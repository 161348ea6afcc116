"""The held-out run tables parse: every row has a source and family, configs name catalogue ids."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path

import pytest

from advisor.catalog import load_knowledge

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ROOT / "benchmarks" / "heldout_training_runs.csv"
SERVING = ROOT / "benchmarks" / "heldout_serving_runs.csv"
FAMILIES = {"paper", "vendor-docs", "independent-blog", "toolkit-docs", "mlperf"}
WORKLOADS = {"pretrain", "finetune", "lora", "qlora"}
PRECISIONS = {"fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"}
LOOPS = {"closed", "open", "offline", "static"}
SHAPE_KEYS = {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab"}
LOAD_COLUMN = {"closed": "concurrency", "open": "request_rate", "static": "batch"}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(f)]


def _toml(name: str) -> dict:
    with (ROOT / "knowledge" / name).open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def catalogue() -> dict[str, set[str]]:
    knowledge = load_knowledge()
    return {
        "gpus": {g.id for g in knowledge.gpus},
        "models": {m.id for m in knowledge.models},
        "engines": set(_toml("serving_engines.toml")) - {"schema_version", "sources"},
        "stacks": set(_toml("training_stacks.toml")["stacks"]),
    }


def _check_common(row: dict[str, str], catalogue: dict[str, set[str]]) -> None:
    where = f"row {row['id']}"
    assert row["source"], f"{where}: no source"
    assert row["table"] or row["row_ref"], f"{where}: no table or row reference in its source"
    assert row["family"] in FAMILIES, f"{where}: family {row['family']!r}"
    assert row["gpu"] in catalogue["gpus"], f"{where}: GPU {row['gpu']!r} is not a catalogue id"
    assert int(row["count"]) >= 1
    if row["precision"]:
        assert row["precision"] in PRECISIONS, f"{where}: precision {row['precision']!r}"


def _check_model(row: dict[str, str], catalogue: dict[str, set[str]]) -> None:
    if row.get("model"):
        assert row["model"] in catalogue["models"], (
            f"row {row['id']}: model {row['model']!r} is not in the catalogue"
        )
        return
    shape = dict(part.split("=") for part in row.get("model_shape", "").split(";") if part)
    assert set(shape) >= SHAPE_KEYS, f"row {row['id']}: neither a catalogue model nor a full shape"
    assert all(int(v) > 0 for v in shape.values())


def test_training_rows_parse(catalogue: dict[str, set[str]]) -> None:
    rows = _rows(TRAINING)
    assert len({r["id"] for r in rows}) == len(rows), "row ids repeat"
    for row in rows:
        _check_common(row, catalogue)
        _check_model(row, catalogue)
        assert row["workload"] in WORKLOADS
        assert float(row["tokens_per_s_per_gpu"]) > 0
        assert float(row["tokens_per_s"]) == pytest.approx(
            float(row["tokens_per_s_per_gpu"]) * int(row["count"]), rel=0.01
        )
        if row["stack"]:
            assert row["stack"] in catalogue["stacks"], f"row {row['id']}: stack {row['stack']!r}"
        ways = [int(row[k]) for k in ("tp", "pp", "cp", "dp") if row[k]]
        if len(ways) == 4:
            assert ways[0] * ways[1] * ways[2] * ways[3] == int(row["count"]), (
                f"row {row['id']}: layout != count"
            )


def test_serving_rows_parse(catalogue: dict[str, set[str]]) -> None:
    rows = _rows(SERVING)
    assert len({r["id"] for r in rows}) == len(rows), "row ids repeat"
    for row in rows:
        _check_common(row, catalogue)
        _check_model(row, catalogue)
        assert row["loop"] in LOOPS, f"row {row['id']}: loop {row['loop']!r}"
        if row["loop"] in LOAD_COLUMN:
            assert float(row[LOAD_COLUMN[row["loop"]]]) > 0, f"row {row['id']}: its load is missing"
        if row["engine"]:
            assert row["engine"] in catalogue["engines"], f"row {row['id']}: engine {row['engine']!r}"
        assert int(row["isl"]) > 0 and int(row["osl"]) > 0
        assert any(row[k] for k in ("output_tok_s", "ttft_ms", "tpot_ms")), (
            f"row {row['id']}: nothing measured"
        )


def _origin(source: str) -> str:
    """The repository (owner/name) or the URL without its query, which identifies a source."""
    return source.split("@")[0] if "@" in source and "://" not in source else source.split("?")[0]


def test_heldout_sources_are_not_in_the_knowledge() -> None:
    known = " ".join(
        r.get("source", "")
        for name in ("llm_benchmarks.csv", "serving_benchmarks.csv", "benchmarks.csv")
        for r in _rows(ROOT / "knowledge" / name)
    )
    held = {_origin(r["source"]) for r in _rows(TRAINING) + _rows(SERVING)}
    assert held, "no held-out sources"
    assert not [s for s in held if s in known], "a held-out source is also a training source"
