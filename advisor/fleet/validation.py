"""Provides validate(): the simulator against Erlang C and the pre-emptive priority M/M/1 queue, and the
replay of a production GPU-cluster trace (live from a folder, or the recorded result shipped)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from advisor.fleet.queueing import Check, simulate_mmc, simulate_priority
from advisor.question.records import dump

RECORDED = "fleet_trace_replay.toml"
MMC = (4, 2.8, 1.0)
"""M/M/4 at 70% load: c servers, arrivals and service per hour."""
PRIORITY = ((0.2, 0.3), 1.0)
"""Two classes at 20% and 30% load on one server."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOut:
    """One closed-form check."""

    name: str
    simulated: float
    exact: float
    error: float
    jobs: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Validation:
    """The figures `gpu-advisor fleet validate` prints."""

    checks: tuple[CheckOut, ...]
    trace: dict[str, Any]
    trace_source: str
    """'replayed now from DIR' or the recorded result's provenance."""


def _out(c: Check) -> CheckOut:
    return CheckOut(
        name=c.name,
        simulated=round(c.simulated, 5),
        exact=round(c.exact, 5),
        error=round(c.error, 5),
        jobs=c.jobs,
    )


def closed_form_checks(
    hours_mmc: float = 100_000.0, hours_priority: float = 300_000.0, seed: int = 1
) -> list[Check]:
    """The long runs: M/M/4 mean wait against Erlang C; each class of a pre-emptive priority M/M/1."""
    c, lam, mu = MMC
    lams, mu2 = PRIORITY
    return [simulate_mmc(c, lam, mu, hours_mmc, seed), *simulate_priority(lams, mu2, hours_priority, seed)]


def recorded_replay() -> dict[str, Any]:
    """The replay measured when the trace was last run (shipped in knowledge/)."""
    raw = resources.files("knowledge").joinpath(RECORDED).read_text(encoding="utf-8")
    return tomllib.loads(raw)


def validate(
    trace_dir: str | None = None, hours_mmc: float = 100_000.0, hours_priority: float = 300_000.0
) -> Validation:
    """Closed-form checks now; the trace replayed from `trace_dir`, else its recorded result."""
    checks = [_out(c) for c in closed_form_checks(hours_mmc, hours_priority)]
    if trace_dir is None:
        rec = recorded_replay()
        return Validation(
            checks=tuple(checks),
            trace={**rec["replay"], "method": rec["method"], "gap": rec["gap"]},
            trace_source=f"recorded result ({rec['source']['ref']}, {rec['source']['date']}); "
            f"rerun: {rec['source']['rerun']}",
        )
    from advisor.fleet.trace import METHOD, load_trace, replay

    result = replay(load_trace(trace_dir))
    return Validation(
        checks=tuple(checks),
        trace={**dump(result, mode="json"), "method": METHOD},
        trace_source=f"replayed now from {trace_dir}",
    )
