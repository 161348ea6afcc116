"""Provides the cloud price schema: one offer = provider, region, instance, GPUs, $/hour, plan, date."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import PositiveFloat, PositiveInt

from advisor.catalog.common import Strict

Pricing = Literal["on-demand", "spot", "reserved-1y", "reserved-3y"]


class Offer(Strict):
    """One rentable instance type at one price."""

    provider: str
    region: str
    instance: str
    gpu: str
    gpus: PositiveInt
    pricing: Pricing
    usd_per_hour: PositiveFloat
    includes_host: bool = True
    date: dt.date
    source: str
    note: str = ""

    @property
    def usd_per_gpu_hour(self) -> float:
        """The instance price divided by its GPUs."""
        return self.usd_per_hour / self.gpus
