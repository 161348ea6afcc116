"""Provides the CLI's output plumbing: plain-text tables, strict JSON, and printing or writing (-o) a
command's text; the file writes themselves are in advisor/cli/writes.py, imported when a file is written."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.question.checks import escape_controls


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[int] = ()) -> str:
    """A fixed-width text table; columns listed in `right` are right-aligned. Control characters in a cell (a
    catalogue's hostile instance name) are shown escaped, never sent to the terminal."""
    cells = [[str(h) for h in headers]] + [
        ["" if v is None else escape_controls(str(v)) for v in row] for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=False))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(cells[0]), rule, *(fmt(r) for r in cells[1:])])


def finite(value: Any) -> Any:
    """value with every NaN or infinite float replaced by None: JSON has no Infinity, and a reader of ours
    must never meet one."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def json_text(value: Any, indent: int | None = 2) -> str:
    """Strict JSON of value (non-finite numbers as null): what every --format json prints."""
    return json.dumps(finite(value), indent=indent, allow_nan=False)


def output_format(fmt: str | None, output: str | None, default: str = "table") -> str:
    """The format given, else the one -o's file name says (.toml, .json), else the default. A format the
    name contradicts (--format json -o plan.toml: a file --from could not read back) is refused."""
    suffix = Path(output).suffix.lower() if output else ""
    named = {".toml": "toml", ".json": "json"}.get(suffix)
    if fmt and named and fmt != named:
        from advisor.question.errors import InputError

        raise InputError(
            f"-o {escape_controls(repr(output))}: a {suffix} name, but --format {fmt} writes "
            f"{'the table' if fmt == 'table' else fmt.upper()}; name it for its format, or leave --format out"
        )
    return fmt or named or default


def emit(text: str, output: str | None, force: bool) -> None:
    """Print text, or write it to -o FILE and say where."""
    if output:
        from advisor.cli.writes import write_atomic

        where = write_atomic(output, text if text.endswith("\n") else text + "\n", force=force)
        print(f"wrote {where}", file=sys.stderr)
    else:
        print(text)
