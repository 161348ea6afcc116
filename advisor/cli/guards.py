"""Provides the checks every command's flags pass before any work: no empty or control-laden values, numbers
in range, and no flag that the workload would silently ignore."""

from __future__ import annotations

import argparse
import re
from typing import Any

from advisor.question.checks import BOUNDS, checked, escape_controls
from advisor.question.errors import InputError

# argparse dest -> the field of checks.BOUNDS it fills, where the names differ.
FIELD_OF = {"budget": "budget_usd", "deadline": "deadline_hours"}
# dest -> the flag as the user typed it, where it is not --dest-with-dashes.
FLAG_OF = {
    "from_file": "--from",
    "output": "-o",
    "file": "FILE",
    "error_type": "TYPE",
    "workload": "--workload",
}
TRAINING_ONLY = ("tokens", "samples", "epochs", "dataset_gb", "optimizer", "lora_rank")
INFERENCE_ONLY = ("requests_per_s", "prompt_tokens", "output_tokens", "tpot_ms", "ttft_ms", "slo_percentile")
LORA_ONLY = ("lora_rank",)
ONPREM_ONLY = ("electricity_usd_kwh", "utilization", "years")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def flag(dest: str) -> str:
    """The flag a parsed argument came from, for messages."""
    return FLAG_OF.get(dest, "--" + dest.replace("_", "-"))


def check_args(args: argparse.Namespace) -> None:
    """InputError (exit 2, one line) for an empty value, a control character or a number out of range."""
    for dest, value in sorted(vars(args).items()):
        if not isinstance(value, str) or dest == "command":
            continue
        if not value.strip():
            raise InputError(f"{flag(dest)}: empty value")
        if _CONTROL.search(value):
            raise InputError(f"{flag(dest)}: {escape_controls(repr(value))} contains control characters")
        field = FIELD_OF.get(dest, dest)
        if field in BOUNDS:
            checked(field, _number(dest, value), flag(dest), given=value)


def _number(dest: str, value: str) -> float:
    from advisor.question.units import parse_count, parse_hours

    if dest == "deadline":
        return parse_hours(value, "--deadline")
    return parse_count(value, flag(dest), positive=False)


def check_applicable(args: argparse.Namespace, kind: str | None, deployment: str | None = None) -> None:
    """InputError for a flag that the workload (or deployment) would ignore, naming what it applies to.

    kind None is training (fine-tuning for a catalogue LLM, else pre-training), as the core resolves it.
    """
    given = {dest for dest, value in vars(args).items() if value is not None and value is not False}
    shown_kind = kind or "training"
    if kind == "inference":
        wrong = [d for d in TRAINING_ONLY if d in given]
        applies = "training workloads"
    else:
        wrong = [d for d in INFERENCE_ONLY if d in given]
        applies = "--workload inference"
        if not wrong and kind not in ("lora", "qlora"):
            wrong, applies = [d for d in LORA_ONLY if d in given], "--workload lora or qlora"
    if wrong:
        flags = ", ".join(flag(d) for d in wrong)
        raise InputError(f"{flags}: not used by --workload {shown_kind}, only by {applies}; leave it out")
    if deployment is not None and deployment != "on-prem" and getattr(args, "command", None) == "recommend":
        wrong = [d for d in ONPREM_ONLY if d in given]
        if wrong:
            raise InputError(
                f"{', '.join(flag(d) for d in wrong)}: only used with --deployment on-prem "
                f"(this is {deployment})"
            )


def given_strings(data: Any, where: str) -> None:
    """InputError when a string anywhere in data (a --from table) holds control characters."""
    if isinstance(data, str) and _CONTROL.search(data):
        raise InputError(f"{where}: {escape_controls(repr(data))} contains control characters")
    if isinstance(data, dict):
        for key, value in data.items():
            given_strings(value, f"{where}.{escape_controls(str(key))}")
    elif isinstance(data, list):
        for i, value in enumerate(data):
            given_strings(value, f"{where}[{i}]")
