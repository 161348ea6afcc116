"""Provides the size of the suite's sampled checks: quick by default, full with GPU_ADVISOR_SLOW_TESTS=1."""

from __future__ import annotations

import os

# `make test-slow` sets it: the search property tests draw more examples and more calibrate processes race
# for the store. The quick sizes still exercise every path the full ones do.
SLOW = os.environ.get("GPU_ADVISOR_SLOW_TESTS") == "1"


def scaled(quick: int, full: int) -> int:
    """quick in `make test`, full in `make test-slow`."""
    return full if SLOW else quick
