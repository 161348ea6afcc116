"""Provides check_spec(): a custom model's shape held to the field registry's bounds and to the invariants
every transformer family keeps (heads divide the hidden size, KV heads divide the heads, top-k within the
experts), so that a shape from any door (a config.json, flags, an exported file) is refused in one line
instead of failing, or answering nonsense, deep in the arithmetic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.catalog.models import ModelSpec
from advisor.question.errors import InputError
from advisor.question.fields import check

# ModelSpec attribute -> the registry field whose bound it keeps.
BOUND_OF = {
    "params": "params",
    "active_params": "params",
    "layers": "layers",
    "hidden": "hidden",
    "heads": "heads",
    "kv_heads": "kv_heads",
    "ffn_hidden": "ffn",
    "moe_ffn_hidden": "ffn",
    "kv_channels": "hidden",
    "kv_lora_rank": "hidden",
    "vocab": "vocab",
    "experts": "experts",
    "experts_per_token": "experts_per_token",
    "max_seq_len": "seq_len",
}


def _clash(attr: str, value: object, problem: str, accepted: str) -> InputError:
    return InputError(
        f"{attr}: {value!r} {problem}; {accepted}",
        field=attr,
        value=value,
        problem=problem,
        accepted=accepted,
    )


def check_spec(spec: ModelSpec) -> None:
    """InputError (structured, naming the attribute) for a size out of bounds or a shape that cannot be."""
    check_sizes({attr: getattr(spec, attr) for attr in BOUND_OF})
    for attr in ("dense_layers", "shared_experts", "qk_rope_head_dim"):
        value = getattr(spec, attr)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1 << 20:
            raise _clash(attr, value, "is not accepted", "a whole number from 0 to 1048576")
    _check_invariants(spec)


def check_sizes(values: Mapping[str, Any]) -> None:
    """The sizes of a shape (ModelSpec attributes, e.g. a file's table before it is a ModelSpec) held to the
    registry's bounds; InputError names the attribute."""
    for attr, name in BOUND_OF.items():
        value = values.get(attr)
        if value is not None:
            try:
                check(name, value)
            except InputError as exc:
                raise _clash(attr, value, exc.problem or "is not accepted", exc.accepted or "") from None


def _check_invariants(spec: ModelSpec) -> None:
    heads, kv_heads, hidden = spec.heads, spec.kv_heads, spec.hidden
    if heads and kv_heads and heads % kv_heads:
        raise _clash(
            "kv_heads", kv_heads, f"does not divide the {heads} attention heads", "a divisor of them"
        )
    if heads and hidden and spec.kv_channels is None and hidden % heads:
        raise _clash("heads", heads, f"does not divide the hidden size {hidden}", "a divisor of it")
    if spec.experts_per_token > spec.experts:
        raise _clash(
            "experts_per_token",
            spec.experts_per_token,
            f"exceeds the {spec.experts} experts",
            f"at most {spec.experts}",
        )
    if spec.layers is not None and spec.dense_layers > spec.layers:
        raise _clash("dense_layers", spec.dense_layers, f"exceeds the {spec.layers} layers", "at most that")
    if spec.active_params is not None and spec.active_params > spec.params:
        raise _clash(
            "active_params", spec.active_params, f"exceeds the {spec.params:g} parameters", "at most that"
        )
