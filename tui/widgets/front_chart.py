"""Provides FrontChart: the cost-vs-time Pareto front as a plotext scatter, the chosen plan marked."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import RenderResult
from textual.color import Color
from textual_plotext import PlotextPlot

from tui.formatting import fmt_hours

if TYPE_CHECKING:
    from advisor.answer.report import FrontPoint, PlanOut, Report

TICKS = 5


def _axis(values: list[float]) -> tuple[bool, float, float]:
    """(log scale?, low, high) with a margin, so no point sits on the frame or under the title."""
    lo, hi = min(values), max(values)
    # Fronts often span orders of magnitude; a log axis keeps every point apart.
    log = lo > 0 and hi > 10 * lo
    if log:
        return True, lo / 1.3, hi * 1.3
    pad = (hi - lo) * 0.12 or abs(hi) * 0.1 or 1.0
    return False, max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad


def _ticks(log: bool, lo: float, hi: float) -> list[float]:
    if log:
        step = (math.log10(hi) - math.log10(lo)) / (TICKS - 1)
        return [10 ** (math.log10(lo) + i * step) for i in range(TICKS)]
    return [lo + i * (hi - lo) / (TICKS - 1) for i in range(TICKS)]


def _usd(value: float, digits: int) -> str:
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"${value / scale:.{digits}g}{suffix}"
    return f"${value:.{digits}g}"


def _hours(value: float, digits: int) -> str:
    return fmt_hours(value) if digits <= 3 else f"{value:.{digits}g} h"


def _seconds(value: float, digits: int) -> str:
    return f"{value:.{digits}g} s"


def _labels(ticks: list[float], label: Callable[[float, int], str]) -> list[str]:
    """Tick labels with just enough digits to tell neighbours apart."""
    for digits in range(3, 9):
        labels = [label(t, digits) for t in ticks]
        if len(set(labels)) == len(labels):
            break
    return labels


class FrontChart(PlotextPlot):
    """Cost (y) against time (x) of the plans no other plan beats on both; colours come from the theme."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._report: Report | None = None
        self._selected: PlanOut | None = None

    def on_mount(self) -> None:
        """Redraw with the new theme's colours when the user switches theme."""
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.replot())

    def show(self, report: Report, selected: PlanOut | None) -> None:
        """Plot the report's front and mark the chosen and the selected plans."""
        self._report, self._selected = report, selected
        self.replot()

    def _rgb(self, variable: str) -> tuple[int, int, int]:
        return Color.parse(self.app.theme_variables[variable]).rgb

    def _set_axis(self, which: str, values: list[float], label: Callable[[float, int], str]) -> None:
        log, lo, hi = _axis(values)
        plt = self.plt
        if log:
            (plt.xscale if which == "x" else plt.yscale)("log")
        # plotext log-scales data and ticks but not the limits: those are given in log10 units.
        limits = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        (plt.xlim if which == "x" else plt.ylim)(*limits)
        ticks = _ticks(log, lo, hi)
        (plt.xticks if which == "x" else plt.yticks)(ticks, _labels(ticks, label))

    def replot(self) -> None:
        """Rebuild the plot from the current report (plotext draws at render time)."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        # clear_figure keeps a log scale set for an earlier report: an empty plot on a log axis takes the
        # log of its default [0, 1] limits and fails, so every plot starts linear.
        plt.xscale("linear")
        plt.yscale("linear")
        report = self._report
        if report is None or not report.front:
            plt.title("No plan fits: nothing to plot")
            self.refresh()
            return
        inference = report.job.kind == "inference"
        front = sorted(report.front, key=lambda p: p.hours_p50)
        xs = [p.hours_p50 for p in front]
        ys = [p.cost_mid for p in front]
        self._set_axis("x", xs, _seconds if inference else _hours)
        self._set_axis("y", ys, _usd)
        plt.scatter(xs, ys, marker="●", color=self._rgb("primary"))
        legend = ["● on the front"]
        chosen = next((p for p in front if p.chosen), None)
        if chosen is not None:
            plt.scatter([chosen.hours_p50], [chosen.cost_mid], marker="◆", color=self._rgb("warning"))
            legend.append(f"◆ chosen: {chosen.gpu} x{chosen.count}")
        point = self._selected_point(front, chosen)
        if point is not None:
            plt.scatter([point.hours_p50], [point.cost_mid], marker="■", color=self._rgb("accent"))
            legend.append(f"■ selected: {point.gpu} x{point.count}")
        # The legend goes in the title: plotext draws its own legend over the top-left points.
        plt.title("   ".join(legend))
        plt.xlabel("request latency P50" if inference else "time P50")
        plt.ylabel("$ per month" if inference else "cost (mid)")
        self.refresh()

    def render(self) -> RenderResult:
        """The plot; should plotext still fail on some size or data, a line saying so instead of a crash."""
        try:
            return super().render()
        except (ValueError, ZeroDivisionError, IndexError) as exc:
            return (
                f"The chart cannot be drawn at this size ({type(exc).__name__}); "
                "the Cost tab has the figures."
            )

    def _selected_point(self, front: list[FrontPoint], chosen: FrontPoint | None) -> FrontPoint | None:
        """The highlighted plan's point, when it is on the front and is not the chosen one."""
        sel = self._selected
        if sel is None or not sel.on_front:
            return None
        if chosen is not None and (sel.gpu, sel.count) == (chosen.gpu, chosen.count):
            return None
        return next((p for p in front if (p.gpu, p.count) == (sel.gpu, sel.count)), None)
