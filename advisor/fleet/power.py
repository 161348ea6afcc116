"""Provides the night-time power cap as a time-varying speed: work done between two times, and its end."""

from __future__ import annotations

import math
from dataclasses import dataclass

DAY = 24.0


@dataclass(frozen=True, slots=True)
class NightCap:
    """Jobs run at `factor` of their speed from `start` to `end` o'clock (a window across midnight), else 1.

    Time is in hours from a Monday 00:00. The cumulative work C(t) is closed-form, so a job's end under the
    cap is found without an event at every window edge."""

    factor: float = 1.0
    start: float = 22.0
    end: float = 8.0

    @property
    def night_hours(self) -> float:
        """Length of the capped window."""
        return (self.end - self.start) % DAY

    @property
    def day_work(self) -> float:
        """Work of one whole day, in full-speed hours."""
        return DAY - self.night_hours * (1.0 - self.factor)

    def capped(self, t: float) -> bool:
        """Whether time t falls in the window."""
        h = t % DAY
        return h >= self.start or h < self.end

    def _within(self, h: float) -> float:
        """Work from 00:00 to hour h of one day."""
        f, s, e = self.factor, self.start, self.end
        if h <= e:
            return f * h
        if h <= s:
            return f * e + (h - e)
        return f * e + (s - e) + f * (h - s)

    def _inverse(self, w: float) -> float:
        """The hour of the day by which work w is done (inverse of _within)."""
        f, s, e = self.factor, self.start, self.end
        if w <= f * e:
            return w / f
        if w <= f * e + (s - e):
            return e + (w - f * e)
        return s + (w - f * e - (s - e)) / f

    def cumulative(self, t: float) -> float:
        """Work from time 0 to t."""
        days = math.floor(t / DAY)
        return days * self.day_work + self._within(t - days * DAY)

    def work(self, t0: float, t1: float) -> float:
        """Work done between t0 and t1, in full-speed hours."""
        return self.cumulative(t1) - self.cumulative(t0)

    def finish(self, t0: float, work: float) -> float:
        """The time at which `work` full-speed hours started at t0 are done."""
        if self.factor >= 1.0:
            return t0 + work
        target = self.cumulative(t0) + work
        days = math.floor(target / self.day_work)
        rest = target - days * self.day_work
        return days * DAY + self._inverse(rest)
