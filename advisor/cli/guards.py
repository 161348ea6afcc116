"""Provides the checks every command's flags pass before any work: no empty or control-laden values, each
registry field read by its parser (bounds and words from advisor.question.fields), and no flag that the
workload would silently ignore."""

from __future__ import annotations

import argparse
import re
from typing import Any

from advisor.cli.options import read_fields
from advisor.question.checks import escape_controls
from advisor.question.errors import InputError
from advisor.question.fields import inapplicable

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> the flag (or positional name) the user typed it as, read from the parser itself."""
    return {
        a.dest: a.option_strings[0] if a.option_strings else str(a.metavar or a.dest) for a in parser._actions
    }


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """InputError (exit 2, one line) for an empty value, a control character or a bad registry value; the
    values read are kept as args.values (field name -> value) for the command."""
    flags = _flags(parser)
    for dest, value in sorted(vars(args).items()):
        if not isinstance(value, str) or dest == "command":
            continue
        name = flags.get(dest, "--" + dest.replace("_", "-"))
        if not value.strip():
            raise InputError(f"{name}: empty value")
        if _CONTROL.search(value):
            raise InputError(f"{name}: {escape_controls(repr(value))} contains control characters")
    args.values = read_fields(args)


def check_applicable(args: argparse.Namespace, kind: str | None, deployment: str | None = None) -> None:
    """InputError for a flag that the workload (or, for recommend, the deployment) would ignore, naming
    what it applies to. kind None is training (fine-tuning for a catalogue LLM, else pre-training)."""
    values: dict[str, Any] = getattr(args, "values", {})
    if getattr(args, "command", None) != "recommend":
        deployment = None
    spelled = getattr(args, "spelled", None) or {}
    if kind == "inference" and spelled.get("batch_size") == "--batch-size":
        # --batch-size N for inference: a static batch of N requests in flight on each replica
        values = {k: v for k, v in values.items() if k != "batch_size"}
    error = inapplicable(values, kind, deployment, values)
    if error is not None:
        raise error


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
