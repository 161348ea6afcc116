"""Provides node profiles: the operation table `gpu-advisor probe` measured on one machine, stored as
`<data dir>/profiles/<NAME>/operations.json`, validated on read (a bad file is moved aside, never dropped)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from advisor.catalog.userdata import data_dir, locked, read_stored, write_text_atomic
from advisor.question.errors import InputError

FILE = "operations.json"
SECTIONS = ("gemm", "attention", "memory", "collectives")
# The columns of knowledge/operations/*.csv (the issue-26 contract), one list per section, in file order.
COLUMNS: dict[str, tuple[str, ...]] = {
    "gemm": ("gpu", "dtype", "m", "n", "k", "tflops", "source", "measured_on", "note"),
    "attention": (
        "gpu",
        "dtype",
        "kernel",
        "pass",
        "causal",
        "batch",
        "seq_len",
        "heads",
        "kv_heads",
        "head_dim",
        "tflops",
        "source",
        "measured_on",
        "note",
    ),
    "memory": ("gpu", "op", "nbytes", "gbs", "source", "measured_on", "note"),
    "collectives": ("op", "link", "gpus", "nodes", "nbytes", "busbw_gbs", "source", "measured_on", "note"),
}
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
KERNELS = ("fa2", "fa3", "sdpa", "cudnn", "triton", "other")
PASSES = ("fwd", "bwd", "fwd_bwd")
MEMORY_OPS = ("copy", "read", "triad", "other")
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
# A profile name is one folder name: letters, digits, '.', '_' and '-', not starting with a dot.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_DATE = re.compile(r"^(\d{4}-\d{2}(-\d{2})?)?$")
_LINK = re.compile(r"^[a-z0-9][a-z0-9.-]{0,39}$")
_POSITIVE_INT = {
    "m",
    "n",
    "k",
    "batch",
    "seq_len",
    "heads",
    "kv_heads",
    "head_dim",
    "nbytes",
    "gpus",
    "nodes",
}
_POSITIVE_FLOAT = {"tflops", "gbs", "busbw_gbs"}
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("gemm", "dtype"): DTYPES,
    ("attention", "dtype"): DTYPES,
    ("attention", "kernel"): KERNELS,
    ("attention", "pass"): PASSES,
    ("memory", "op"): MEMORY_OPS,
    ("collectives", "op"): COLLECTIVE_OPS,
}
# The payload's own fields besides the four row lists (read by `probe --list` and the answers' notes).
_HEADER: dict[str, Callable[[Any], bool]] = {
    "name": lambda v: isinstance(v, str) and bool(NAME.match(v)),
    "gpu": lambda v: isinstance(v, str) and bool(v.strip()),
    "gpus": lambda v: type(v) is int and v >= 1,
    "host": lambda v: isinstance(v, str),
    "measured_on": lambda v: isinstance(v, str) and bool(_DATE.match(v)) and bool(v),
    "torch": lambda v: isinstance(v, str),
    "cuda": lambda v: isinstance(v, str),
}
# Optional fields a probe writes; unknown other keys are ignored (a newer probe may add some).
_OPTIONAL: dict[str, Callable[[Any], bool]] = {
    "device_name": lambda v: isinstance(v, str),
    "notes": lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
    "duration_s": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v >= 0,
    "quick": lambda v: isinstance(v, bool),
}


def check_name(name: str) -> str:
    """name when it is a usable profile name; InputError (one line) naming what is accepted otherwise."""
    if not isinstance(name, str) or not NAME.match(name):
        raise InputError(
            f"{name!r} is not a profile name (accepted: 1-80 letters, digits, '.', '_' or '-', "
            "not starting with '.')"
        )
    return name


def profiles_dir() -> Path:
    """`<data dir>/profiles`: one folder per node profile (calibration runs of issue 27 live there too)."""
    return data_dir() / "profiles"


def profile_dir(name: str) -> Path:
    """The folder of one named profile."""
    return profiles_dir() / check_name(name)


def _cell(section: str, column: str, value: Any) -> Any:
    """The validated value of one cell (ints and floats as numbers, causal as a bool); ValueError if bad."""
    where = f"{section}.{column}"
    if column in _POSITIVE_INT:
        if type(value) is not int or value < 1:
            raise ValueError(f"{where}: expected a positive integer, got {value!r}")
        return value
    if column in _POSITIVE_FLOAT:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{where}: expected a positive number, got {value!r}")
        if value <= 0:
            raise ValueError(f"{where}: expected a positive number, got {value!r}")
        return float(value)
    if column == "causal":
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected text, got {value!r}")
    choices = _CHOICES.get((section, column))
    if choices is not None and value not in choices:
        raise ValueError(f"{where}: {value!r} is not one of {', '.join(choices)}")
    if column == "measured_on" and not _DATE.match(value):
        raise ValueError(f"{where}: {value!r} is not YYYY-MM or YYYY-MM-DD")
    if column == "link" and not _LINK.match(value):
        raise ValueError(f"{where}: {value!r} is not a link key")
    if column in ("gpu", "source") and not value.strip():
        raise ValueError(f"{where}: empty")
    return value


def check_row(section: str, row: Any) -> dict[str, Any]:
    """One row with exactly the section's columns, each cell validated; ValueError naming the bad cell."""
    if not isinstance(row, Mapping):
        raise ValueError(f"{section}: expected a row object, got {type(row).__name__}")
    columns = COLUMNS[section]
    missing = [c for c in columns if c not in row]
    extra = sorted(str(c) for c in row if c not in columns)
    if missing or extra:
        raise ValueError(f"{section} row: missing {missing} / unknown {extra} columns")
    return {c: _cell(section, c, row[c]) for c in columns}


def check_payload(payload: Any, name: str | None = None) -> dict[str, Any]:
    """The payload validated (header fields, every row); ValueError naming the first bad value."""
    if not isinstance(payload, Mapping):
        raise ValueError("expected a JSON object")
    out: dict[str, Any] = {}
    for key, ok in (*_HEADER.items(), *_OPTIONAL.items()):
        if key not in payload:
            if key in _HEADER:
                raise ValueError(f"missing {key!r}")
            continue
        if not ok(payload[key]):
            raise ValueError(f"{key}: bad value {payload[key]!r}")
        out[key] = payload[key]
    if name is not None and out["name"] != name:
        raise ValueError(f"name {out['name']!r} does not match its folder {name!r}")
    for section in SECTIONS:
        rows = payload.get(section)
        if not isinstance(rows, list):
            raise ValueError(f"{section}: expected a list of rows")
        out[section] = [check_row(section, r) for r in rows]
    return out


def load_profile(name: str) -> dict[str, Any] | None:
    """The whole stored payload of profile `name`, validated; None when absent (or bad: moved aside)."""
    path = profile_dir(name) / FILE
    return read_stored(path, lambda text: check_payload(json.loads(text), name))


def load_operations(name: str) -> dict[str, list[dict[str, Any]]] | None:
    """Profile `name`'s rows by section (gemm, attention, memory, collectives), in the columns of
    knowledge/operations/*.csv with typed cells; None when there is no such profile (or its file was bad
    and has been moved aside with a warning)."""
    payload = load_profile(name)
    if payload is None:
        return None
    return {section: payload[section] for section in SECTIONS}


def exists(name: str) -> bool:
    """Whether profile `name` has an operations file (valid or not)."""
    return (profile_dir(name) / FILE).exists()


def save_operations(name: str, payload: Mapping[str, Any], *, replace: bool = False) -> Path:
    """Store payload as profile `name` (locked, atomic); InputError if it exists and replace is False.
    The payload is validated first: a file this module would reject on read is never written."""
    folder = profile_dir(name)
    checked = check_payload(payload, name)
    with locked(f"{name}.operations", profiles_dir()):
        path = folder / FILE
        if path.exists() and not replace:
            raise InputError(f"profile {name!r} exists ({path}); replace it, or give another name")
        write_text_atomic(path, json.dumps(checked, indent=1) + "\n")
    return path


def list_profiles() -> list[str]:
    """The names of the stored node profiles (folders holding an operations file), sorted."""
    folder = profiles_dir()
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if NAME.match(p.name) and (p / FILE).is_file())
