"""Provides the parsing of the TCO flags (tco, recommend --deployment on-prem) into typed TCO inputs."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from advisor.ops.tco import TcoInputs
from advisor.question.errors import InputError
from advisor.question.units import parse_count

FLAGS = (
    ("years", "--years"),
    ("utilization", "--utilization"),
    ("electricity_usd_kwh", "--electricity-usd-kwh"),
    ("pue", "--pue"),
    ("staff_usd_year", "--staff-usd-year"),
    ("gpu_hours_per_month", "--gpu-hours-per-month"),
    ("off_peak_usd_kwh", "--off-peak-usd-kwh"),
)


def onprem_overrides(args: argparse.Namespace) -> dict[str, float]:
    """The user's --years, --utilization, tariff, PUE and staff flags as TCO input overrides."""
    out = {}
    for name, flag in FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            out[name] = parse_count(value, flag, positive=name != "staff_usd_year")
    if "utilization" in out and not 0 < out["utilization"] <= 1:
        raise InputError(f"--utilization {out['utilization']:g}: must be in (0, 1]")
    return out


def tco_inputs(args: argparse.Namespace) -> TcoInputs:
    """`gpu-advisor tco` flags as TcoInputs; a bad value is a one-line error naming its flag."""
    count = parse_count(args.count, "--count")
    if count != int(count):
        raise InputError(f"--count: {args.count!r} must be a whole number")
    try:
        return TcoInputs(gpu=args.gpu, count=int(count), **onprem_overrides(args))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]).replace("_", "-")
        raise InputError(f"--{field}: {err['msg']} (got {err['input']!r})") from exc
