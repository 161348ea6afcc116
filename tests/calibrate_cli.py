"""Provides the calibrate tests' shared pieces: the command run in process, predict's JSON answer, the run
logs folder and the 8-GPU Llama-3.1-8B Megatron configuration the issue-27 runs were measured in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli.main import main

LOGS = Path(__file__).parent / "data" / "run_logs"
MEGATRON_8B = [
    "--gpu",
    "h100-sxm",
    "--count",
    "8",
    "--model",
    "llama-3.1-8b",
    "--seq-len",
    "8192",
    "--workload",
    "pretrain",
    "--stack",
    "megatron",
    "--micro-batch",
    "1",
    "--recompute",
    "full",
]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command's exit code, standard output and standard error."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def predicted(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    """predict's JSON answer for the flags given (its exit code must be 0)."""
    code, out, err = cli(capsys, "predict", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)
