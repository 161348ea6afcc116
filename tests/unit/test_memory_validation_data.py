"""Unit tests of benchmarks/memory_validation.csv: published measured peak memory rows, each valid and
sourced."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_validation.py"


@pytest.fixture(scope="module")
def mv() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_validation", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_validation"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ids(knowledge) -> tuple[set[str], set[str]]:
    return {g.id for g in knowledge.gpus}, {m.id for m in knowledge.models}


def test_every_row_is_valid(mv: ModuleType, ids: tuple[set[str], set[str]]) -> None:
    problems = [(i, p) for i, row in enumerate(mv.load_rows(), 2) for p in mv.row_problems(row, *ids)]
    assert problems == []


def test_enough_rows_from_enough_sources(mv: ModuleType) -> None:
    rows = mv.load_rows()
    assert len(rows) >= 200
    assert len({r.source for r in rows}) >= 10
    assert sum(r.measured_peak is not None for r in rows) >= 100
    assert sum(r.outcome == "oom" for r in rows) >= 15 and any(r.kind == "max_seq_len" for r in rows)
    # Fine-tuning stacks are part of the evidence, not only pre-training frameworks.
    assert {"torchtune", "unsloth", "litgpt", "hf"} <= {r.stack for r in rows if r.workload != "pretrain"}


def test_shape_rows_are_read_by_their_shape(mv: ModuleType) -> None:
    from advisor.learned.memory.rows import read_rows
    from advisor.learned.memory.rows import spec_of as _spec

    raw = next(r for r in read_rows() if not r["model"] and r["gated"] == "no")
    spec = _spec(raw)
    assert spec is not None and not spec.gated_ffn
    assert (spec.layers, spec.hidden, spec.ffn_hidden) == (
        int(raw["layers"]),
        int(raw["hidden"]),
        int(raw["ffn"]),
    )
    assert spec.params == float(raw["params"])
    assert _spec(next(r for r in read_rows() if r["model"])) is None


def test_peaks_are_converted_to_gb_and_below_the_memory(mv: ModuleType, knowledge) -> None:
    from advisor.physics.memory import capacity_gb

    for row in mv.load_rows():
        if row.measured_peak_gb is None:
            continue
        gpu = knowledge.gpu(row.gpu or "h100-sxm")
        # gpu_memory_gb is the memory as vendors state it: GiB
        capacity = (
            row.gpu_memory_gb * 1.073741824 if row.gpu_memory_gb else capacity_gb(gpu, knowledge.assumptions)
        )
        assert row.measured_peak_gb <= capacity, row.source_ref
    gib_row = next(r for r in mv.load_rows() if r.unit == "GiB")
    assert gib_row.measured_peak_gb == pytest.approx(gib_row.measured_peak * 1.073741824)


@pytest.mark.parametrize(
    "change,expected",
    [
        ({"gpu": "h1000"}, "unknown gpu 'h1000'"),
        ({"model": "", "layers": None}, "the shape layers"),
        ({"dp": 3}, "!= gpu_count"),
        ({"outcome": "maybe"}, "outcome 'maybe'"),
        ({"measured_peak": 10.0, "unit": "", "outcome": "fits"}, "measured_peak and unit go together"),
        ({"kind": "max_seq_len", "gpu_memory_gb": None}, "needs gpu_memory_gb"),
        ({"source_ref": "a blog"}, "must cite"),
        ({"gated": "yes"}, "gated 'yes'"),
        ({"model": "", "gated": ""}, "gated ''"),
        ({"settings": "compile=true"}, "settings 'compile=true'"),
        ({"settings": "optimizer_in_backward=maybe"}, "trait=value"),
    ],
)
def test_bad_rows_are_caught(
    mv: ModuleType, ids: tuple[set[str], set[str]], change: dict, expected: str
) -> None:
    row = dataclasses.replace(mv.load_rows()[0], **change)
    assert any(expected in p for p in mv.row_problems(row, *ids))


def test_summary_has_a_line_per_source(mv: ModuleType) -> None:
    rows = mv.load_rows()
    lines = mv.summary(rows)
    assert len(lines) == len({r.source for r in rows}) + 2 and lines[-1].split()[1] == str(len(rows))


def test_source_settings_change_the_estimate(knowledge) -> None:
    from advisor.learned.memory.rows import estimate, read_rows

    row = next(r for r in read_rows() if "Fuse optimizer step" in r["source_ref"])
    assert row["settings"] == ""  # torchtune's default: the optimizer steps inside backward
    with_full_grads = {**row, "settings": "optimizer_in_backward=false"}
    assert estimate(knowledge, with_full_grads).device > estimate(knowledge, row).device + 5.0
    with pytest.raises(ValueError, match=r"no \[loss.nope\]"):
        estimate(knowledge, {**row, "settings": "loss=nope"})


def test_the_shipped_band_is_the_fit_on_the_peaks(knowledge) -> None:
    from advisor.learned.memory.rows import estimate, read_rows
    from advisor.learned.memory.validation import _errors_by_source, fit_band

    rows = read_rows()
    p10, p25, p50, p75, p90 = fit_band(_errors_by_source(rows, [estimate(knowledge, r) for r in rows]))
    m = knowledge.assumptions.memory
    assert m["central_error"].range == pytest.approx((p10, p90), abs=0.0015)
    assert m["verdict_band"].range == pytest.approx((p25, p75), abs=0.0015)
    assert m["central_error"].value == pytest.approx(p50, abs=0.0015) == m["verdict_band"].value


def test_verdicts_meet_the_goal_with_each_source_held_out(knowledge) -> None:
    from advisor.learned.memory.validation import check_all

    runs = [c for c in check_all(knowledge) if c.kind == "run"]
    assert len(runs) >= 100 and len({c.source for c in runs}) >= 8
    assert sum(c.agrees for c in runs) / len(runs) >= 0.9
    assert sum(c.verdict3 == "may not fit" for c in runs) / len(runs) <= 0.15
