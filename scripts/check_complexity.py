#!/usr/bin/env python3
"""Fail when a function in advisor/ or tui/ is longer than 60 lines or has a cyclomatic complexity above 20.

Run from anywhere: `python scripts/check_complexity.py [--report]`. Length counts the lines from `def` to the
function's last line, docstring included (what a reader scrolls through); complexity is radon's McCabe number.
--report lists every function over half a limit, worst first, and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("advisor", "tui")
MAX_LINES = 60
MAX_COMPLEXITY = 20


def functions(block: Function | Class) -> list[Function]:
    """Every function in a radon block: methods of classes, and closures nested in functions."""
    if isinstance(block, Class):
        return [f for m in block.methods for f in functions(m)]
    return [block, *(f for c in block.closures for f in functions(c))]


def measured() -> list[tuple[str, int, int, str]]:
    """(location, lines, complexity, name) of every function below the packages, each once."""
    out: dict[str, tuple[str, int, int, str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for block in cc_visit(path.read_text(encoding="utf-8")):
                for f in functions(block):
                    where = f"{path.relative_to(ROOT)}:{f.lineno}"
                    name = f"{f.classname}.{f.name}" if getattr(f, "classname", None) else f.name
                    # radon lists a method both inside its class and on its own: keep one.
                    out[where] = (where, f.endline - f.lineno + 1, f.complexity, name)
    return list(out.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="list the largest functions and exit 0")
    opts = parser.parse_args(argv)
    rows = measured()
    if opts.report:
        big = [r for r in rows if r[1] > MAX_LINES // 2 or r[2] > MAX_COMPLEXITY // 2]
        for where, lines, cc, name in sorted(
            big, key=lambda r: -max(r[1] / MAX_LINES, r[2] / MAX_COMPLEXITY)
        ):
            print(f"{lines:4d} lines  cc {cc:3d}  {name}  {where}")
        over = [r for r in rows if r[1] > MAX_LINES or r[2] > MAX_COMPLEXITY]
        print(f"{len(rows)} functions; {len(over)} over a limit")
        return 0
    over = [r for r in rows if r[1] > MAX_LINES or r[2] > MAX_COMPLEXITY]
    for where, lines, cc, name in over:
        print(f"{where}: {name}: {lines} lines (limit {MAX_LINES}), complexity {cc} (limit {MAX_COMPLEXITY})")
    if over:
        print(f"{len(over)} of {len(rows)} functions over a limit", file=sys.stderr)
        return 1
    print(f"{len(rows)} functions, each at most {MAX_LINES} lines and complexity {MAX_COMPLEXITY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
