"""The field registry holds at every door: each field's bound is refused the same way by the CLI's flags,
the wizard and `--from` files; the CLI's options and the wizard's rows are derived from it; no core message
names a CLI flag."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import subprocess
from pathlib import Path

import pytest

from advisor.cli.main import build_parser, main
from advisor.question.errors import InputError
from advisor.question.fields import FIELDS, Field, check
from tui.form import LABELS, WIZARD_FIELDS
from tui.form import check as wizard_check

ROOT = Path(__file__).resolve().parents[2]
BOUNDED = sorted(name for name, f in FIELDS.items() if f.bound is not None)
FROM_TABLE = {"workload": "workload", "config": "workload.config", "constraints": "constraints", "spec": None}


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMANDS = _commands()


def _command_of(name: str) -> str:
    """The first command whose parser reads the field (its flag fills the field's own dest)."""
    for command, parser in COMMANDS.items():
        if any(a.dest == name for a in parser._actions):
            return command
    raise AssertionError(f"no command takes {name}")


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


def _too_large(f: Field) -> float:
    assert f.bound is not None
    return f.bound.hi * 2 if f.bound.hi > 0 else f.bound.hi + 1


def _spec_file(tmp_path: Path, table: str, key: str, value: object) -> Path:
    import tomli_w

    inputs: dict[str, dict] = {"workload": {"model": "llama-2-7b"}, "constraints": {}}
    if table == "workload.config":
        inputs["workload"]["config"] = {key: value}
    else:
        inputs[table][key] = value
    path = tmp_path / "spec.toml"
    path.write_text(tomli_w.dumps({"schema_version": 1, "inputs": inputs}))
    return path


EXTRA = {"predict": ["--gpu", "h100-sxm"], "tco": ["--gpu", "h100-sxm", "--count", "8"]}


@pytest.mark.parametrize("name", BOUNDED)
def test_every_bound_is_the_same_at_every_door(name: str, tmp_path: Path, knowledge) -> None:
    f = FIELDS[name]
    value = _too_large(f)
    value = int(value) if f.integer else value
    text = f"{value:g}"
    with pytest.raises(InputError) as core:
        check(name, value)
    problem, accepted = core.value.problem, core.value.accepted
    assert problem and accepted and "must be" in problem
    # The CLI: the flag of the first command that takes it, one line naming the flag, exit 2.
    command = _command_of(name)
    code, err = _cli([command, f.flag, text, *EXTRA.get(command, [])])
    assert code == 2 and f"{f.flag}: '{text}' {problem}; {accepted}" in err, err
    # The wizard: the same words beside the field, under its label (never a flag).
    if name in WIZARD_FIELDS:
        kind = next(k for k in ("pretrain", "lora", "inference") if k in f.applies_to)
        model = "resnet50" if name == "samples" else "llama-2-7b"  # samples: a model counted in images
        errors = wizard_check({"kind": kind, "model": model, name: text}, knowledge).errors
        assert errors[name] == f"'{text}' {problem}; {accepted}" and name in LABELS
    # --from: the same words, naming the key in the file.
    table = FROM_TABLE.get(f.part)
    if table is not None:
        code, err = _cli(["recommend", "--from", str(_spec_file(tmp_path, table, name, value))])
        assert code == 2 and f"inputs.{table}.{name}: {core.value.detail()}" in err, err


def test_the_same_out_of_range_budget_is_refused_the_same_way(tmp_path: Path) -> None:
    code, cli = _cli(["recommend", "--model", "llama-2-7b", "--budget", "2e12"])
    wizard = wizard_check({"kind": "lora", "model": "llama-2-7b", "budget_usd": "2e12"}, None).errors[
        "budget_usd"
    ]
    code_from, spec = _cli(
        ["recommend", "--from", str(_spec_file(tmp_path, "constraints", "budget_usd", 2e12))]
    )
    words = "must be at most 1e+12; a number greater than 0 and at most 1e+12, e.g. 20k"
    assert code == code_from == 2
    assert cli.strip().endswith(f"--budget: '2e12' {words}")
    assert wizard == f"'2e12' {words}"
    assert spec.strip().endswith(f"inputs.constraints.budget_usd: 2e+12 {words}")


def test_cli_options_and_wizard_rows_are_the_registrys() -> None:
    for command, parser in COMMANDS.items():
        for action in parser._actions:
            f = FIELDS.get(action.dest)
            if f is not None and action.option_strings:
                assert action.option_strings[0] == f.flag, (command, action.dest)
    assert all(LABELS[n] == FIELDS[n].label for n in WIZARD_FIELDS)
    assert {"max_gpus", "budget_usd", "tp", "engine"} <= WIZARD_FIELDS  # "most GPUs" is asked in the wizard


@pytest.mark.parametrize(
    "table,key,value,words",
    [
        ("spec", "hidden", -4096, "inputs.workload.spec.hidden: -4096 must be at least 1"),
        ("spec", "heads", 0, "inputs.workload.spec.heads: 0 must be at least 1"),
        ("spec", "kv_heads", 5, "inputs.workload.spec.kv_heads: 5 does not divide the 32 attention heads"),
        (
            "workload.config",
            "global_batch",
            1e18,
            "inputs.workload.config.global_batch: 1e+18 must be at most",
        ),
        ("workload", "seq_lenn", 4096, "unknown key 'seq_lenn'; did you mean 'seq_len'?"),
    ],
)
def test_from_runs_the_checks_the_flags_make(
    tmp_path: Path, table: str, key: str, value: object, words: str
) -> None:
    import tomli_w

    spec = {"id": "custom", "name": "custom", "kind": "llm", "params": 7e9, "source": "shape", "layers": 32}
    spec |= {"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "vocab": 32000}
    if table == "spec":
        inputs = {"workload": {"spec": spec | {key: value}}, "constraints": {}}
        path = tmp_path / "spec.toml"
        path.write_text(tomli_w.dumps({"schema_version": 1, "inputs": inputs}))
    else:
        path = _spec_file(tmp_path, table, key, value)
    code, err = _cli(["recommend", "--from", str(path)])
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and words in lines[0], err


@pytest.mark.parametrize("flag", ["--gpu-usd-hour", "--hours", "--storage-gb", "--storage-usd-gb-month"])
def test_cost_refuses_negative_figures(flag: str) -> None:
    argv = ["cost", "--gpu-usd-hour", "2", "--gpus", "8", "--hours", "10", flag, "-1"]
    code, err = _cli(argv)
    assert code == 2 and f"{flag}: '-1' must be" in err, err


def test_auto_leaves_a_value_to_the_search() -> None:
    assert check("tp", "auto") is None and check("zero", "auto") is None and check("tp", " 8 ") == 8
    with pytest.raises(InputError) as exc:
        check("tp", "x")
    assert "whole number" in str(exc.value) and "13B" not in str(exc.value)  # words for this field
    with pytest.raises(InputError):
        check("budget_usd", "auto")  # a budget is not searched: auto is not a budget


def test_no_core_message_names_a_cli_flag() -> None:
    found = subprocess.run(
        ["grep", "-rnE", r"pass --|[( ]--[a-z][a-z-]+ (N|[0-9])", "advisor", "--include=*.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout.splitlines()
    assert [line for line in found if not line.startswith("advisor/cli/")] == []
    raisers = subprocess.run(
        ["grep", "-rn", "-A4", "InputError(", "advisor", "--include=*.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    flagged = [
        line
        for line in raisers.splitlines()
        if not line.startswith("advisor/cli/") and re.search(r"[\"' (]--[a-z][a-z-]+", line)
    ]
    assert flagged == []


@pytest.mark.parametrize(
    "text,words",
    [
        ("1m", "'1m' is ambiguous: m could be minutes or months"),  # never a million hours
        ("2e6", "'2e6' must be at most 1e+06"),
        ("soon", "'soon' is not a duration"),
    ],
)
def test_a_deadline_reads_units_not_number_suffixes(text: str, words: str) -> None:
    code, err = _cli(["recommend", "--model", "llama-2-7b", "--deadline", text])
    assert code == 2 and f"--deadline: {words}" in err, err
    assert check("deadline_hours", "90min") == 1.5 and check("deadline_hours", "1e3") == 1000


def test_a_bad_fused_loss_is_refused_the_same_way_at_every_door(tmp_path: Path, knowledge) -> None:
    from advisor.job.door import question
    from advisor.job.inputs import RunConfig

    words = "'ligr' is not accepted; one of off, liger, flash-attn, chunked; did you mean 'liger'?"
    code, cli = _cli(["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--fused-loss", "ligr"])
    assert code == 2 and cli.strip().endswith(f"--fused-loss: {words}"), cli
    wizard = wizard_check({"kind": "pretrain", "model": "llama-2-7b", "fused_loss": "ligr"}, knowledge)
    assert wizard.errors["fused_loss"] == words and "fused_loss" in WIZARD_FIELDS
    code, spec = _cli(
        ["recommend", "--from", str(_spec_file(tmp_path, "workload.config", "fused_loss", "ligr"))]
    )
    assert code == 2 and spec.strip().endswith(f"inputs.workload.config.fused_loss: {words}"), spec
    with pytest.raises(InputError, match="fused_loss: 'ligr' is not accepted"):
        question(RunConfig, {"fused_loss": "ligr"})
    assert question(RunConfig, {"fused_loss": "liger"}).fused_loss == "liger"
    assert RunConfig().fused_loss is None  # off unless stated: the stack's own loss path
