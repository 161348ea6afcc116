"""Provides the readers of a user's measured runs: training logs and serving benchmark results, told apart
by their content (the door where a run file is validated)."""

from advisor.catalog.run_logs.detect import read_run_file
from advisor.catalog.run_logs.reading import Reading

__all__ = ["Reading", "read_run_file"]
