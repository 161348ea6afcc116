"""Provides the user's calibration runs, stored per named profile: `<data dir>/profiles/<NAME>/runs.json`,
locked, written atomically, validated on read (a bad file is moved aside, never dropped)."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from advisor.catalog.profiles import RUNS_FILE as RUNS_FILE
from advisor.catalog.profiles import check_profile_name as check_profile_name
from advisor.catalog.profiles import default_profile as default_profile
from advisor.catalog.profiles import list_profiles as list_profiles
from advisor.catalog.profiles import profiles_dir as profiles_dir
from advisor.catalog.userdata import locked, read_stored, write_text_atomic
from advisor.question.checks import shown
from advisor.question.errors import InputError
from advisor.question.records import Check, dump, validate

STORE_FORMAT: Literal[1] = 1


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class StoredRun:
    """One measured run of the user's, with what the uncalibrated model predicted for it (base) and the
    model that predicted it (base_model), so a changed model is noticed and the run re-predicted."""

    id: Annotated[str, Check(min_length=1, max_length=64)]
    kind: Literal["training", "serving"]
    format: Annotated[str, Check(max_length=32)]
    source: Annotated[str, Check(max_length=500)]
    added: Annotated[str, Check(max_length=32)]
    gpu: Annotated[str, Check(min_length=1, max_length=64)]
    count: Annotated[int, Check(ge=1, le=100_000)]
    key: Annotated[str, Check(min_length=1, max_length=32)]
    """The training stack or the serving engine."""
    version: Annotated[str, Check(max_length=64)] | None = None
    workload: dict[str, Any]
    constraints: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, float]
    base: dict[str, float]
    base_model: Annotated[str, Check(max_length=2000)]
    point: dict[str, float] = field(default_factory=dict)
    trusted_far: bool = False

    def __post_init__(self) -> None:
        for name in ("measured", "base", "point"):
            values: dict[str, float] = getattr(self, name)
            bad = [k for k, v in values.items() if not math.isfinite(v) or (k != "rate" and abs(v) > 1e15)]
            if bad:
                raise ValueError(f"{name}: {bad[0]}: not a finite figure")


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ServingFit:
    """The serving efficiencies' multipliers fitted jointly on a profile's results on one GPU and engine
    (advisor/learned/calibration/serving.py): which model and runs they were fitted on, the posterior mean
    (log multipliers) and precision, and each run's figures simulated at them (what is left is residual)."""

    base_model: Annotated[str, Check(max_length=2000)]
    runs: list[str]
    mean: Annotated[list[float], Check(min_length=1, max_length=16)]
    precision: list[list[float]]
    fitted: dict[str, dict[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) and abs(v) <= 10 for v in self.mean):
            raise ValueError("mean: a multiplier is not a finite log figure")


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class StoredRuns:
    """The file: its format number, the runs and the serving fits by 'gpu|engine'."""

    format: Literal[1]
    name: str
    runs: list[StoredRun]
    serving_fits: dict[str, ServingFit] = field(default_factory=dict)


def _path(name: str) -> Path:
    return profiles_dir() / check_profile_name(name) / RUNS_FILE


def _parse(text: str) -> StoredRuns:
    return validate(StoredRuns, json.loads(text))


@functools.lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int, size: int) -> tuple[StoredRuns | None, tuple[StoredRun, ...]]:
    # The file and its runs, read once while the file is unchanged: callers cache on the runs' tuple.
    stored = read_stored(Path(path), _parse)
    return stored, tuple(stored.runs) if stored is not None else ()


def _stored(name: str) -> tuple[StoredRuns | None, tuple[StoredRun, ...]]:
    path = _path(name)
    try:
        stat = path.stat()
    except OSError:
        return None, ()
    return _read(str(path), stat.st_mtime_ns, stat.st_size)


def load_runs(name: str) -> tuple[StoredRun, ...]:
    """The runs of one profile (none when it has none); a file that does not validate is moved aside. The
    same tuple while the file is unchanged (callers cache on it)."""
    return _stored(name)[1]


def fit_key(gpu: str, engine: str) -> str:
    """The key of a GPU's and engine's serving fit in a profile."""
    return f"{gpu}|{engine}"


def load_serving_fit(name: str, gpu: str, engine: str) -> ServingFit | None:
    """The serving fit of a profile's results on one GPU and engine, None when there is none."""
    got = _stored(name)[0]
    return got.serving_fits.get(fit_key(gpu, engine)) if got is not None else None


def _write(name: str, runs: list[StoredRun], fits: dict[str, ServingFit]) -> None:
    payload = StoredRuns(format=STORE_FORMAT, name=name, runs=runs, serving_fits=fits)
    write_text_atomic(_path(name), json.dumps(dump(payload, mode="json"), indent=1, sort_keys=True) + "\n")


def add_runs(name: str, new: list[StoredRun], rebase: dict[str, StoredRun] | None = None) -> tuple[int, int]:
    """Store new runs in a profile under its lock (a run already stored is not stored twice); rebase
    replaces stored runs by id (their base re-predicted). (runs stored now, runs in the profile)."""
    with locked(f"profile-{check_profile_name(name)}"):
        _read.cache_clear()
        got, runs = _stored(name)
        old = list(runs)
        if rebase:
            old = [rebase.get(r.id, r) for r in old]
        ids = {r.id for r in old}
        fresh = [r for r in new if r.id not in ids]
        _write(name, old + fresh, dict(got.serving_fits) if got is not None else {})
        _read.cache_clear()
        return len(fresh), len(old) + len(fresh)


def store_serving_fit(name: str, gpu: str, engine: str, fit: ServingFit | None) -> None:
    """Keep (or, given None, drop) the serving fit of a profile's results on one GPU and engine."""
    with locked(f"profile-{check_profile_name(name)}"):
        _read.cache_clear()
        got, runs = _stored(name)
        if got is None:
            return
        fits = dict(got.serving_fits)
        if fit is None:
            fits.pop(fit_key(gpu, engine), None)
        else:
            fits[fit_key(gpu, engine)] = fit
        _write(name, list(runs), fits)
        _read.cache_clear()


def reset_profile(name: str) -> list[str]:
    """Remove a profile's runs (files another tool keeps there, such as the probe's operations.json, stay);
    the names of the files removed."""
    with locked(f"profile-{check_profile_name(name)}"):
        path = _path(name)
        removed = [path.name] if path.is_file() else []
        path.unlink(missing_ok=True)
        folder = path.parent
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        _read.cache_clear()
    return removed


def profile_text(name: str) -> str:
    """One profile's runs as the JSON it is stored in (for export)."""
    got, runs = _stored(name)
    if got is None or not runs:
        raise InputError(
            f"profile {shown(name)}: no calibration runs; the list shows the profiles that have runs"
        )
    return json.dumps(dump(got, mode="json"), indent=1, sort_keys=True) + "\n"
