"""Import a script of benchmarks/ (not a package) by name, for the tests of its helpers."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def bench_script(name: str) -> ModuleType:
    """benchmarks/<name>.py as a module; the folder is on the path only while it imports."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))
