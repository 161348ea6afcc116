"""Provides the portfolio: a team's workloads with arrival rates, priority classes, deadlines and owners."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ValidationError

from advisor.catalog.loader import Knowledge
from advisor.job.door import input_names, question
from advisor.job.inputs import RunConfig, Workload
from advisor.question.checks import read_input_text
from advisor.question.errors import InputError
from advisor.question.fields import limits
from advisor.question.records import NON_EMPTY, Check, dump, validate

Priority = Literal["urgent", "regular", "batch", "development", "serving"]
PRIORITIES: tuple[str, ...] = ("urgent", "regular", "batch", "development", "serving")
# The guide's four queues in pre-emption order, then always-on serving (which holds its own replicas).
CLASS_OF = {"urgent": 0, "regular": 1, "batch": 2, "development": 3}
TRAINING_CLASSES = ("urgent", "regular", "development")
# What an entry may hold besides the wizard's workload fields.
FLEET_KEYS = {
    "name",
    "owner",
    "priority",
    "per_week",
    "requests_per_s",
    "hourly_profile",
    "deadline_hours",
    "gpus",
    "requests",
    "turnaround_hours",
}
WORKLOAD_KEYS = set(input_names(Workload)) - {"config", "spec"}
CONFIG_KEYS = set(input_names(RunConfig))


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One line of the portfolio: a workload as the wizard understands it, how often it comes, whose it is."""

    name: Annotated[str, Check(min_length=1, max_length=80)]
    owner: Annotated[str, Check(min_length=1, max_length=80)]
    priority: Priority
    workload: Workload
    per_week: Annotated[float, Check(gt=0, le=100_000)] | None = None
    """Arrivals per week (training, batch inference, development)."""
    requests_per_s: Annotated[float, Check(**limits("requests_per_s"))] | None = None
    """Serving: the mean request rate."""
    hourly_profile: tuple[float, ...] | None = None
    """Serving: 24 multipliers of the mean rate, one per hour of the day (their mean is taken as 1)."""
    deadline_hours: Annotated[float, Check(**limits("deadline_hours"))] | None = None
    """Hours from arrival by which the job must finish."""
    gpus: Annotated[int, Check(**limits("max_gpus"))] | None = None
    """GPUs per job (training, batch); None: the smallest count that finishes within the turnaround."""
    requests: Annotated[float, Check(gt=0, le=1e12)] | None = None
    """Batch inference: requests each job processes."""
    turnaround_hours: Annotated[float, Check(gt=0, le=10_000)] = 24.0
    """Without a deadline: the planner picks the smallest count that finishes within this (a setting)."""

    @property
    def serving(self) -> bool:
        """An always-on service rather than jobs that arrive."""
        return self.priority == "serving"


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """The cluster's operating policy (the guide's, unless changed)."""

    night_cap: bool = True
    """The guide's 90% power cap from 22:00 to 08:00."""
    dev_cap_fraction: Annotated[float, Check(gt=0, le=1)] = 0.20
    """Development jobs hold at most this share of the GPUs (the guide's 20% elastic pool)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizing:
    """What the sizing searches and how long it simulates."""

    gpus: tuple[str, ...] = ()
    """Candidate GPU types (default: the shipped shortlist of data-centre GPUs with a purchase price)."""
    years: Annotated[float, Check(gt=0, le=10)] = 3.0
    weeks: Annotated[float, Check(gt=0, le=520)] = 52.0
    replications: Annotated[int, Check(ge=2, le=200)] = 20
    seed: Annotated[int, Check(ge=0)] = 1
    mix: bool = True
    """Also try a training core of one GPU type with an inference edge of another."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Portfolio:
    """A team's whole portfolio and the policy its cluster runs under."""

    name: Annotated[str, Check(max_length=120)] = "portfolio"
    policy: Policy = Policy()
    sizing: Sizing = Sizing()
    workload: Annotated[tuple[Entry, ...], NON_EMPTY]

    def plain(self) -> dict[str, Any]:
        """The portfolio as the TOML a user writes (None and empty values left out)."""
        out: dict[str, Any] = dump(self, mode="json", exclude_none=True)
        for w, e in zip(out["workload"], self.workload, strict=True):
            inner = dump(e.workload, mode="json", exclude_none=True, exclude_defaults=True)
            config = inner.pop("config", {})
            w.pop("workload")
            w.update(inner)
            if config:
                w["config"] = config
        return out


def _fail(where: str, field: str, value: Any, problem: str, accepted: str | None = None) -> InputError:
    shown = "" if value is None else f" {value!r}"
    tail = f"; accepted: {accepted}" if accepted else ""
    return InputError(
        f"{where}: {field}{shown} {problem}{tail}",
        field=field,
        value=value,
        problem=problem,
        accepted=accepted,
    )


def _entry_name(raw: dict[str, Any], index: int) -> str:
    name = raw.get("name")
    return f"workload {name!r}" if isinstance(name, str) and name else f"workload #{index + 1}"


def _validation_error(where: str, exc: ValidationError, raw: dict[str, Any]) -> InputError:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"] if p not in ("workload",)]
    field = ".".join(loc) or "entry"
    value = raw.get(loc[0]) if loc and loc[0] in raw else err.get("input")
    if err["type"] == "missing":
        return _fail(where, field, None, "is missing", _accepted(field))
    message = str(err["msg"]).removeprefix("Value error, ")
    return _fail(where, field, value if not isinstance(value, dict) else None, f"is refused: {message}")


def _accepted(field: str) -> str | None:
    if field == "priority":
        return ", ".join(PRIORITIES)
    if field == "owner":
        return "a team or project name"
    if field == "name":
        return "a short unique name"
    return None


def _entry(raw: Any, index: int) -> Entry:
    where = f"workload #{index + 1}"
    if not isinstance(raw, dict):
        raise _fail(where, "entry", None, "is not a table", "[[workload]] tables")
    where = _entry_name(raw, index)
    unknown = sorted(set(raw) - FLEET_KEYS - WORKLOAD_KEYS - {"config"})
    if unknown:
        accepted = ", ".join(sorted(FLEET_KEYS | WORKLOAD_KEYS | {"config"}))
        raise _fail(where, unknown[0], None, "is not a portfolio field", accepted)
    if "priority" not in raw:
        raise _fail(where, "priority", None, "is missing", ", ".join(PRIORITIES))
    inner = {k: v for k, v in raw.items() if k in WORKLOAD_KEYS or k == "config"}
    if raw.get("priority") == "serving":
        inner.setdefault("kind", "inference")
    outer = {k: v for k, v in raw.items() if k in FLEET_KEYS}
    try:
        workload = question(Workload, inner)
    except InputError as exc:
        raise _fail(
            where, exc.field or "workload", exc.value, exc.problem or str(exc), exc.accepted
        ) from None
    except ValidationError as exc:
        raise _validation_error(where, exc, raw) from None
    try:
        entry = validate(Entry, {**outer, "workload": workload})
    except ValidationError as exc:
        raise _validation_error(where, exc, raw) from None
    _check_entry(where, entry)
    return entry


def _check_entry(where: str, e: Entry) -> None:
    """What the schema cannot say alone: each class's rate, the serving profile."""
    if e.serving:
        if e.requests_per_s is None:
            raise _fail(
                where, "requests_per_s", None, "is missing", "a serving entry's mean requests per second"
            )
        if e.workload.kind not in (None, "inference"):
            raise _fail(where, "kind", e.workload.kind, "cannot be served", "inference")
        if e.hourly_profile is not None:
            p = e.hourly_profile
            if len(p) != 24 or any(not math.isfinite(x) or x < 0 for x in p) or sum(p) <= 0:
                raise _fail(where, "hourly_profile", None, "is not 24 non-negative multipliers", "24 numbers")
        return
    if e.per_week is None:
        raise _fail(where, "per_week", None, "is missing", "arrivals per week, e.g. 3 or 0.5")
    if e.priority == "batch" and e.workload.kind == "inference" and e.requests is None:
        raise _fail(where, "requests", None, "is missing", "the requests each batch-inference job processes")
    if e.workload.kind == "inference" and e.priority != "batch":
        raise _fail(
            where, "kind", "inference", f"is not a {e.priority} job", "serving or batch for inference"
        )


def parse_portfolio(data: dict[str, Any], knowledge: Knowledge | None = None) -> Portfolio:
    """A portfolio from parsed TOML; InputError names the entry and field (one line)."""
    if not isinstance(data, dict):
        raise _fail("portfolio", "file", None, "is not a table")
    data = {k: v for k, v in data.items() if k != "result"}  # an exported plan re-runs as its own input
    entries = data.get("workload")
    if not isinstance(entries, list) or not entries:
        raise _fail("portfolio", "workload", None, "is missing", "one [[workload]] table per workload")
    parsed = tuple(_entry(raw, i) for i, raw in enumerate(entries))
    names = [e.name for e in parsed]
    for name in names:
        if names.count(name) > 1:
            raise _fail(f"workload {name!r}", "name", name, "is used twice", "a unique name per entry")
    top = {k: v for k, v in data.items() if k != "workload"}
    try:
        portfolio = validate(Portfolio, {**top, "workload": parsed})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise _fail("portfolio", field, err.get("input"), f"is refused: {err['msg']}") from None
    if knowledge is not None:
        check_against(portfolio, knowledge)
    return portfolio


def check_against(portfolio: Portfolio, knowledge: Knowledge) -> None:
    """Models and GPUs must be in the catalogue: the entry and field are named, with the accepted ids."""
    for e in portfolio.workload:
        if e.workload.model is not None:
            try:
                knowledge.model(e.workload.model)
            except InputError:
                ids = ", ".join(m.id for m in knowledge.models)
                raise _fail(
                    f"workload {e.name!r}", "model", e.workload.model, "is not in the catalogue", ids
                ) from None
    for gpu in portfolio.sizing.gpus:
        try:
            knowledge.gpu(gpu)
        except InputError:
            ids = ", ".join(g.id for g in knowledge.gpus if g.price)
            raise _fail("portfolio", "sizing.gpus", gpu, "is not in the catalogue", ids) from None


def load_portfolio(path: str | Path, knowledge: Knowledge | None = None) -> Portfolio:
    """Read and check a portfolio TOML file (or an exported fleet plan, which carries its portfolio)."""
    text = read_input_text(str(path), "portfolio", 2_000_000)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    return parse_portfolio(data, knowledge)
