"""Provides read_spec_file(): the inputs of an exported recommendation (`--from`), read as untrusted input."""

from __future__ import annotations

import tomllib
from typing import Any

from advisor.cli.guards import given_strings
from advisor.question.checks import read_input_text, shown
from advisor.question.errors import InputError
from advisor.question.fields import FIELDS, did_you_mean, of_part
from advisor.question.records import validate

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
    workload = dict(inputs["workload"])
    _check_table(workload, (*WORKLOAD_KEYS, *of_part("config")), f"{where}: inputs.workload")
    config = workload.get("config", {})
    if not isinstance(config, dict):
        raise InputError(f"{where}: inputs.workload.config must be a table of configuration keys")
    _check_table(config, of_part("config"), f"{where}: inputs.workload.config")
    if "spec" in workload:
        _check_spec(workload["spec"], f"{where}: inputs.workload.spec")
    _check_table(constraints, of_part("constraints"), f"{where}: inputs.constraints")
    return workload, dict(constraints)


WORKLOAD_KEYS = (*of_part("workload"), "config", "spec")
"""The keys an [inputs.workload] table may hold: the workload's fields, its configuration (as a table or
flat, as the CLI's flags), and a model shape."""


def _check_table(table: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    """Every key known and every value read as the same flag or wizard field would be (the registry's parser,
    bound and words), named by its place in the file."""
    for key, value in table.items():
        if key not in keys:
            hint = did_you_mean(key, keys)
            raise InputError(f"{where}: unknown key {shown(key)}" + (f"; {hint}" if hint else ""))
        if key in FIELDS and FIELDS[key].kind not in ("text", "path"):
            try:
                FIELDS[key].parse(value)
            except InputError as exc:
                raise InputError(f"{where}.{key}: {exc.detail()}") from None


def _check_spec(spec: Any, where: str) -> None:
    """A model shape checked as a shape given any other way: its types, bounds and invariants."""
    from pydantic import ValidationError

    from advisor.catalog.models import ModelSpec
    from advisor.job.spec_check import check_sizes, check_spec

    if not isinstance(spec, dict):
        raise InputError(f"{where}: must be a table (a model shape)")
    try:
        check_sizes(spec)  # the registry's words first, as for the flags
        check_spec(validate(ModelSpec, spec))
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise InputError(f"{where}.{key}: {err['msg']} (got {shown(err.get('input'))})") from None
    except InputError as exc:
        raise InputError(f"{where}.{exc.field}: {exc.detail()}") from None


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
