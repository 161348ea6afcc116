"""Provides the CLI's output plumbing: plain-text tables and atomic, no-clobber file writes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from advisor.errors import InputError
from advisor.userdata import write_text_atomic


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[int] = ()) -> str:
    """A fixed-width text table; columns listed in `right` are right-aligned."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(cells[0]), rule, *(fmt(r) for r in cells[1:])])


def write_atomic(path: str | Path, text: str, *, force: bool) -> Path:
    """Write text to path through a temporary file and a rename; refuse to replace a file without force."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise InputError(f"-o {path}: is a directory; give a file name")
    if target.exists() and not force:
        raise InputError(f"-o {path}: file exists; pass --force to overwrite it")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"-o {path}: folder {parent} does not exist")
    write_text_atomic(target, text)
    return target


def emit(text: str, output: str | None, force: bool) -> None:
    """Print text, or write it to -o FILE and say where."""
    if output:
        where = write_atomic(output, text if text.endswith("\n") else text + "\n", force=force)
        print(f"wrote {where}", file=sys.stderr)
    else:
        print(text)
