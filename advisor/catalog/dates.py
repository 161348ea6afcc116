"""Provides today's date (pinned by $GPU_ADVISOR_TODAY for tests) and the age of a dated figure in months."""

from __future__ import annotations

import datetime as dt
import os

DAYS_PER_MONTH = 30.44


def today() -> dt.date:
    """Today's date ($GPU_ADVISOR_TODAY, an ISO date, pins it for tests and reproducible reports)."""
    pinned = os.environ.get("GPU_ADVISOR_TODAY")
    return dt.date.fromisoformat(pinned) if pinned else dt.date.today()


def age_months(date: dt.date, now: dt.date | None = None) -> float:
    """How many months old a dated figure (a price, an offer) is."""
    return ((now or today()) - date).days / DAYS_PER_MONTH
