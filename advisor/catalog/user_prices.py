"""Provides UserPrices: the file `gpu-advisor prices update` writes (offers with their date and where they
were read), and its reading at the door; imported only where that file exists or is written."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Literal

from advisor.catalog.prices import Offer
from advisor.question.records import validate


@dataclass(frozen=True, slots=True, kw_only=True)
class UserPrices:
    """The file `prices update` writes: offers with their date and where they were read."""

    schema_version: Literal[1] = 1
    fetched: dt.date
    source: str
    offers: tuple[Offer, ...]


def parse_user_prices(text: str) -> UserPrices:
    """The file's text as its record (pydantic judges it: the file is outside data)."""
    return validate(UserPrices, json.loads(text))
