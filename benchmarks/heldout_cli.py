"""Runs `gpu-advisor predict` in-process for the held-out benchmark: argv in, parsed JSON (or refusal) out.

Only the public CLI entry is used (advisor.cli.main.main), so the benchmark exercises the same code path as a
user and keeps working on branches that add flags or fields: a flag this build does not know is dropped and
reported,
never silently mapped to something else.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any


@dataclass(frozen=True, slots=True)
class Answer:
    """One predict call: the parsed JSON (None when refused), why it was refused, flags this build lacks."""

    data: dict[str, Any] | None
    refusal: str
    dropped: tuple[str, ...] = field(default=())


def _call(argv: list[str]) -> tuple[int, str, str]:
    from advisor.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse errors and --help
            code = stop.code if isinstance(stop.code, int) else 2
    return int(code or 0), out.getvalue(), err.getvalue().strip()


@cache
def predict_flags() -> frozenset[str]:
    """The long flags `gpu-advisor predict` accepts in this build (read from its --help)."""
    _, text, _ = _call(["predict", "--help"])
    return frozenset(re.findall(r"(--[a-z][a-z0-9-]*)", text))


def has_flag(flag: str) -> bool:
    return flag in predict_flags()


def _strip_unknown(args: list[str]) -> tuple[list[str], tuple[str, ...]]:
    known = predict_flags()
    kept: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(args):
        flag = args[i]
        takes_value = i + 1 < len(args) and not args[i + 1].startswith("--")
        if flag.startswith("--") and known and flag not in known:
            dropped.append(flag)
        else:
            kept.append(flag)
            if takes_value:
                kept.append(args[i + 1])
        i += 2 if takes_value else 1
    return kept, tuple(dropped)


@cache
def fabric_keys() -> frozenset[str]:
    """The fabric keys of this build (knowledge/assumptions.toml [fabric.*]; empty if unread)."""
    try:
        from advisor.catalog import load_knowledge

        return frozenset(load_knowledge().assumptions.fabric)
    except Exception:  # noqa: BLE001 - another branch's catalogue API: no fabric is passed then
        return frozenset()


def fabric_args(row: dict[str, str]) -> list[str]:
    """`--fabric KEY` for a run whose source states its network (the `fabric` column), when this build has
    the flag and the key; nothing otherwise (the tool's default fabric for the GPU answers)."""
    key = row.get("fabric", "")
    if key and has_flag("--fabric") and key in fabric_keys():
        return ["--fabric", key]
    return []


# A row's own words for the modules a selective recomputation recomputes ('the recompute column read as:
# 'norm, act' = selective recomputation of the layernorm and activation modules'), and Megatron-Core's name of
# each (--recompute-modules; the activation recomputed by module is the MoE experts' one, moe_act).
_MODULE_PHRASE = re.compile(r"selective recomputation of the ([a-z_ ,]+?) modules")
_MODULE_NAMES = re.compile(r"--recompute-modules((?: [a-z_]+)+)")
_MODULE_WORDS = {
    "layernorm": "layernorm",
    "activation": "moe_act",
    "attention": "core_attn",
    "mlp": "mlp",
    "moe": "moe",
    "shared_experts": "shared_experts",
}


def recompute_modules_args(row: dict[str, str]) -> list[str]:
    """`--recompute-modules A,B` for a selective row whose note or assumed text states the modules it
    recomputes (Megatron-Core's names, or the words _MODULE_WORDS reads), when this build has the flag;
    nothing otherwise (the tool's selective recomputation answers)."""
    if row.get("recompute") != "selective" or not has_flag("--recompute-modules"):
        return []
    text = f"{row.get('note', '')} {row.get('assumed', '')}"
    named = _MODULE_NAMES.search(text)
    phrase = _MODULE_PHRASE.search(text)
    if named:
        modules = named.group(1).split()
    elif phrase:
        words = re.split(r",\s*|\s+and\s+|\s+", phrase.group(1))
        modules = [_MODULE_WORDS[w] for w in words if w in _MODULE_WORDS]
    else:
        return []
    return ["--recompute-modules", ",".join(dict.fromkeys(modules))] if modules else []


def dispatcher_args(row: dict[str, str]) -> list[str]:
    """`--moe-dispatcher deepep` for a run whose source states DeepEP (its `note` or `software`, not "DeepEP
    off"), when this build has the flag; nothing otherwise (the tool's default dispatcher answers)."""
    text = f"{row.get('software', '')} {row.get('note', '')}"
    if "DeepEP" in text and "DeepEP off" not in text and has_flag("--moe-dispatcher"):
        return ["--moe-dispatcher", "deepep"]
    return []


def predict(args: list[str]) -> Answer:
    """`gpu-advisor predict ARGS --format json`; flags this build lacks are dropped and named."""
    kept, dropped = _strip_unknown(args)
    code, out, err = _call(["predict", *kept, "--format", "json"])
    data: dict[str, Any] | None = None
    if out.strip():
        try:
            data = json.loads(out)
        except json.JSONDecodeError:
            data = None
    if data is not None and data.get("throughput") is not None and code == 0:
        return Answer(data, "", dropped)
    last_line = err.splitlines()[-1] if err else ""
    reason = (data or {}).get("refusal") or last_line
    return Answer(None, f"exit {code}: {reason or 'no throughput'}", dropped)


def p50(data: dict[str, Any], key: str) -> float | None:
    """The P50 (or value) of a range field of the answer, None when absent."""
    part = data.get(key)
    if not isinstance(part, dict):
        return None
    value = part.get("p50", part.get("value"))
    return float(value) if isinstance(value, int | float) else None


def band(data: dict[str, Any], key: str) -> tuple[float | None, float | None]:
    part = data.get(key)
    if not isinstance(part, dict):
        return None, None
    lo, hi = part.get("p10"), part.get("p90")
    return (
        float(lo) if isinstance(lo, int | float) else None,
        float(hi) if isinstance(hi, int | float) else None,
    )
