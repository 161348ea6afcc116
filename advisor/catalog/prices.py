"""Provides the cloud price schema (one offer = provider, region, instance, GPUs, $/hour, plan, date) and the
offers refreshed by `gpu-advisor prices update` in the user data directory, which supersede the snapshot."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from advisor.catalog.common import PosFloat, PosInt
from advisor.catalog.dates import DAYS_PER_MONTH, age_months, today  # noqa: F401  (re-exported)
from advisor.question.records import validate

Pricing = Literal["on-demand", "spot", "reserved-1y", "reserved-3y"]
USER_PRICES = "prices.json"


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Offer:
    """One rentable instance type at one price."""

    provider: str
    region: str
    instance: str
    gpu: str
    gpus: PosInt
    pricing: Pricing
    usd_per_hour: PosFloat
    includes_host: bool = True
    date: dt.date
    source: str
    note: str = ""

    @property
    def usd_per_gpu_hour(self) -> float:
        """The instance price divided by its GPUs."""
        return self.usd_per_hour / self.gpus


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class UserPrices:
    """The file `prices update` writes: offers with their date and where they were read."""

    schema_version: Literal[1] = 1
    fetched: dt.date
    source: str
    offers: tuple[Offer, ...]


def user_prices_path() -> Path:
    """Where refreshed offers live (the user data directory)."""
    from advisor.catalog.userdata import data_dir

    return data_dir() / USER_PRICES


_CACHE: dict[tuple[str, int, int], UserPrices | None] = {}


def _parse_user_prices(text: str) -> UserPrices:
    return validate(UserPrices, json.loads(text))


def load_user_prices(path: Path | None = None) -> UserPrices | None:
    """The refreshed offers, or None when there are none.

    A damaged or hostile file (not JSON, wrong shape, not a regular file, too large) is moved aside with a
    warning, never silently ignored: the snapshot then serves."""
    from advisor.catalog.userdata import read_stored

    path = path or user_prices_path()
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        return None
    if key not in _CACHE:
        _CACHE[key] = read_stored(path, _parse_user_prices)  # validated by pydantic only when the file exists
    return _CACHE[key]
