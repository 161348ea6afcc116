"""Provides `python -m tui`: the same as `gpu-advisor` with no arguments."""

from tui.app import run_app

raise SystemExit(run_app())
