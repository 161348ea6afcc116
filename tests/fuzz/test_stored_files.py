"""Stored files that go bad: moved (or copied) aside with one warning line, never lost, and the command
answers."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from fuzz_cases import (
    CSV_FILES,
    MODEL_CORRUPTIONS,
    ROOT,
    TICKS_CORRUPTIONS,
    aside_files,
    problems,
    run_in_process,
    write_file,
)

PREDICT = [
    "predict",
    "--model",
    "resnet50",
    "--gpu",
    "a100-80gb-sxm",
    "--precision",
    "fp16",
    "--format",
    "json",
]


def _calibration() -> Path:
    folder = Path(os.environ["GPU_ADVISOR_DATA_DIR"]) / "calibration"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("name", sorted(MODEL_CORRUPTIONS))
def test_bad_calibration_model_is_moved_aside_and_predict_answers(name: str) -> None:
    shipped = (ROOT / "knowledge" / "efficiency_model.json").read_text(encoding="utf-8")
    bad = MODEL_CORRUPTIONS[name](shipped)
    model = write_file(_calibration() / "efficiency_model.json", bad)
    for argv in (PREDICT, ["recommend", "--model", "resnet50", "--samples", "1.2M", "--format", "json"]):
        outcome = run_in_process(argv)
        assert outcome.code == 0 and not problems(outcome), outcome
    warnings = [line for line in outcome.stderr.splitlines() if "warning" in line]
    assert not warnings, "the second command must find the file already set aside"
    aside = list(aside_files(model.parent))
    assert not model.exists() and len(aside) == 1
    assert aside[0].read_bytes() == bad.encode("utf-8", "surrogatepass"), "the bad file is kept byte for byte"


def test_one_warning_line_names_the_file_set_aside() -> None:
    write_file(_calibration() / "efficiency_model.json", "{truncated")
    outcome = run_in_process(PREDICT)
    warnings = [line for line in outcome.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "efficiency_model.json.corrupt-" in warnings[0], outcome.stderr
    assert "calibration" not in outcome.stdout.split('"efficiency_source"')[1].split("\n")[0]


STORE_CORRUPTIONS = {
    "truncated": lambda t: t[: len(t) // 2],
    "garbage": lambda t: "\x00\x01 not json",
    "extra-field": lambda t: t.replace('"trusted_far"', '"surprise": 1, "trusted_far"', 1),
    "nan": lambda t: re.sub(r'("throughput": )[0-9.e+]+', r"\1NaN", t, count=1),
    "count-1e20": lambda t: re.sub(r'"count": \d+', '"count": 1e20', t, count=1),
    "no-header": lambda t: t.replace('"format": 1,', "", 1),
}


@pytest.mark.parametrize("name", sorted(STORE_CORRUPTIONS))
def test_stored_runs_that_go_bad_are_kept_aside(name: str, tmp_path: Path) -> None:
    csv_path = write_file(tmp_path / "runs.csv", CSV_FILES["good"])
    assert run_in_process(["calibrate", str(csv_path)]).code == 0
    (runs,) = Path(os.environ["GPU_ADVISOR_DATA_DIR"]).glob("profiles/*/runs.json")
    bad = STORE_CORRUPTIONS[name](runs.read_text(encoding="utf-8"))
    assert bad != runs.read_text(encoding="utf-8")
    write_file(runs, bad)
    outcome = run_in_process(["calibrate", "--list", "--format", "json"])
    assert outcome.code == 0 and not problems(outcome), outcome
    assert "warning" in outcome.stderr and ".corrupt-" in outcome.stderr
    kept = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in aside_files(runs.parent)]
    assert len(kept) == 1 and kept[0] == bad, "nothing lost"
    again = run_in_process(["calibrate", "--list", "--format", "json"])
    assert "warning" not in again.stderr and again.stdout == outcome.stdout


@pytest.mark.parametrize("name", sorted(TICKS_CORRUPTIONS))
def test_bad_ticks_file_is_moved_aside_then_ticks_save(name: str, tmp_path: Path) -> None:
    from advisor.catalog.userdata import ChecklistTicks

    path = write_file(tmp_path / "checklist-ticks.json", TICKS_CORRUPTIONS[name])
    ticks = ChecklistTicks(path)
    assert ticks.ticked("oom") == set()
    ticks.set("oom", 2, True)
    assert ChecklistTicks(path).ticked("oom") == {2}
    kept = list(aside_files(tmp_path))
    assert len(kept) == 1 and kept[0].read_text() == TICKS_CORRUPTIONS[name]


def test_data_dir_that_is_a_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = write_file(tmp_path / "data", "not a folder")
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(blocker))
    csv_path = write_file(tmp_path / "runs.csv", CSV_FILES["good"])
    outcome = run_in_process(["calibrate", str(csv_path)])
    assert outcome.code == 2 and not problems(outcome) and "not a directory" in outcome.stderr, outcome
    assert blocker.read_text() == "not a folder"
    assert run_in_process(["calibrate", "--list"]).code in (0, 2)
