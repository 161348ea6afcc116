"""Provides a small YAML writer for the launch artefacts (block style, quoted strings), so the runtime needs
no YAML library; tests read the output back with PyYAML."""

from __future__ import annotations

import json
from typing import Any


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a valid double-quoted YAML scalar


def _leaf(value: Any) -> str:
    """A mapping value written inline: a scalar, or an empty dict or list in flow style."""
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump(value: Any, indent: int = 0) -> str:
    """YAML text of nested dicts, lists and scalars."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:")
                lines.append(dump(item, indent + 1))
            else:
                lines.append(f"{pad}{key}: {_leaf(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                body = dump(item, indent + 1).lstrip()
                lines.append(f"{pad}- {body}")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    else:
        lines.append(pad + _scalar(value))
    return "\n".join(lines)
