"""Provides the fleet plan as plain data: JSON-safe (no NaN) and TOML that `fleet plan --from` re-runs."""

from __future__ import annotations

import math
from typing import Any

from advisor.fleet.plan import FleetPlan


def clean(value: Any) -> Any:
    """The value with every non-finite float as None (JSON and TOML have no NaN a reader agrees on)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value


def fleet_toml(plan: FleetPlan) -> str:
    """The portfolio at the top (so the file is itself a portfolio) and the result under [result]."""
    import tomli_w  # only TOML output needs the writer

    data = clean(plan.plain())
    portfolio = data.pop("portfolio")
    header = (
        "# gpu-advisor fleet plan. The top is the portfolio; re-run it with: gpu-advisor fleet plan --from "
        "THIS_FILE\n"
    )
    return header + tomli_w.dumps(_drop_none({**portfolio, "result": data}))
