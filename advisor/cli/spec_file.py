"""Provides read_spec_file(): the inputs of an exported recommendation (`--from`), read as untrusted input."""

from __future__ import annotations

import tomllib
from typing import Any

from advisor.cli.guards import given_strings
from advisor.question.checks import check_fields, read_input_text, shown
from advisor.question.errors import InputError

# An exported recommendation is a few kilobytes and nests five tables deep.
MAX_SPEC_BYTES = 1 << 20
MAX_DEPTH = 32


def read_spec_file(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(workload fields, constraint fields) of a file written by `recommend --format toml`; InputError (one
    line) for anything else: not a regular file, too large, not TOML, too deep, a missing or unknown
    schema_version, a string with control characters or a number out of range."""
    where = f"--from {shown(path)}"
    text = read_input_text(path, "--from", MAX_SPEC_BYTES)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not a TOML file ({exc})") from exc
    except RecursionError as exc:
        raise InputError(f"{where}: nested too deeply to be an exported recommendation") from exc
    if _depth(data) > MAX_DEPTH:
        raise InputError(f"{where}: nested more than {MAX_DEPTH} deep; not an exported recommendation")
    _check_version(data, where)
    inputs = data.get("inputs")
    if not isinstance(inputs, dict) or not isinstance(inputs.get("workload"), dict):
        raise InputError(
            f"{where}: no [inputs.workload] table; expected a file written by "
            "`gpu-advisor recommend --format toml`"
        )
    constraints = inputs.get("constraints", {})
    if not isinstance(constraints, dict):
        raise InputError(f"{where}: inputs.constraints must be a table")
    given_strings(inputs, f"{where}: inputs")
    names = lambda table, d: {k: f"{where}: inputs.{table}.{k}" for k in d}  # noqa: E731
    workload = check_fields(dict(inputs["workload"]), names("workload", inputs["workload"]))
    return workload, check_fields(dict(constraints), names("constraints", constraints))


def _check_version(data: dict[str, Any], where: str) -> None:
    from advisor.answer.report import SCHEMA_VERSION

    version = data.get("schema_version")
    if version is None:
        raise InputError(
            f"{where}: no schema_version; expected schema_version = {SCHEMA_VERSION} "
            "(a file written by `gpu-advisor recommend --format toml`)"
        )
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(
            f"{where}: schema_version {shown(version)} is not a version number; "
            f"this gpu-advisor reads {SCHEMA_VERSION}"
        )
    if version > SCHEMA_VERSION:
        raise InputError(
            f"{where}: schema_version {version} is newer than this gpu-advisor reads "
            f"({SCHEMA_VERSION}); upgrade gpu-advisor"
        )
    if version != SCHEMA_VERSION:
        raise InputError(
            f"{where}: schema_version {version} is unknown; this gpu-advisor reads {SCHEMA_VERSION}"
        )


def _depth(value: Any) -> int:
    """How deep tables and arrays nest (iterative: a hostile file must not exhaust the stack here either)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level + 1) for child in children)
    return deepest
