"""Provides the TCO flags (tco, recommend --deployment on-prem) as typed TCO inputs."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.cli.options import values_of


def onprem_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The user's --years, --utilization, tariff, PUE and staff flags as TCO input overrides (each already
    read and held to its bound by the field registry)."""
    return values_of(getattr(args, "values", {}), "tco")


def tco_inputs(args: argparse.Namespace) -> Any:
    """`gpu-advisor tco` flags as TcoInputs; a bad value is a one-line error naming its flag."""
    from advisor.cli.validated import validated
    from advisor.ops.tco import TcoInputs

    values = args.values
    return validated(TcoInputs, {"gpu": values["gpu"], "count": values["count"], **onprem_overrides(args)})
