"""Provides the memory model checked against benchmarks/memory_validation.csv: verdicts on the central
estimate, peak errors, the longest sequence, and the error band fitted with each source held out."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from advisor.catalog.loader import Knowledge
from advisor.learned.memory.rows import (
    CSV_PATH,
    Estimate,
    estimate,
    footing,
    label_model,
    measured_gb,
    micro_batch,
    read_rows,
    row_recompute,
    spec_of,
)
from advisor.question.errors import AdvisorError

__all__ = ["CSV_PATH", "Check", "check_all", "fit_band", "memory_validation_lines", "read_rows", "spec_of"]
SEQ_FLOOR, SEQ_CEIL = 128, 1 << 22
BAND_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


@dataclass(frozen=True, slots=True, repr=False)
class Check:
    """One CSV row against the model: the central estimate, the verdict, and what was measured."""

    source: str
    label: str
    kind: str
    outcome: str
    central_gb: float
    """The central estimate of what the GPU must hold: the verdict's figure."""
    usable_gb: float
    predicted_gb: float
    """The central estimate on the footing of the counter the source measured (allocated, reserved, or
    device)."""
    measured_gb: float | None
    band: tuple[float, float] = (0.0, 0.0)
    """The (P25, P75) relative error band of the verdict, fitted on the other sources' peaks."""
    spread: tuple[float, float] = (0.0, 0.0)
    """The (P10, P90) range, fitted likewise."""
    measured_seq: int | None = None
    predicted_seq: int | None = None
    seq_range: tuple[int, int] | None = None
    """The longest sequence by the P90 and by the P10 end of the band."""

    @property
    def predicted_fits(self) -> bool:
        """Whether the central estimate fits the usable memory."""
        return self.central_gb <= self.usable_gb

    @property
    def agrees(self) -> bool:
        """Whether the predicted verdict is the published one."""
        return self.predicted_fits == (self.outcome == "fits")

    @property
    def verdict3(self) -> str:
        """Three-way verdict: fits (the P90 end fits), does not fit (not even the P10 end), may not fit."""
        if self.central_gb * (1 + self.band[1]) <= self.usable_gb:
            return "fits"
        return "does not fit" if self.central_gb * (1 + self.band[0]) > self.usable_gb else "may not fit"

    @property
    def agrees3(self) -> bool:
        """Whether the published outcome is consistent with the three-way verdict."""
        return self.verdict3 != ("does not fit" if self.outcome == "fits" else "fits")

    @property
    def rel_error(self) -> float | None:
        """Measured / predicted - 1 on the measured counter's footing."""
        return None if self.measured_gb is None else self.measured_gb / self.predicted_gb - 1

    @property
    def gb_error(self) -> float | None:
        """Measured - predicted peak on the same footing, GB."""
        return None if self.measured_gb is None else self.measured_gb - self.predicted_gb

    @property
    def in_band(self) -> bool:
        """Whether the measured peak lies within the (P25, P75) band around the prediction."""
        err = self.rel_error
        return err is not None and self.band[0] <= err <= self.band[1]

    @property
    def in_spread(self) -> bool:
        """Whether the measured peak lies within the (P10, P90) range around the prediction."""
        err = self.rel_error
        return err is not None and self.spread[0] <= err <= self.spread[1]

    @property
    def seq_error(self) -> float | None:
        """Predicted (central) / measured longest sequence - 1."""
        if not self.measured_seq or self.predicted_seq is None:
            return None
        return self.predicted_seq / self.measured_seq - 1

    @property
    def seq_in_range(self) -> bool:
        """Whether the measured longest sequence lies within the band's range of longest sequences."""
        return bool(
            self.measured_seq
            and self.seq_range
            and self.seq_range[0] <= self.measured_seq <= self.seq_range[1]
        )


def weighted_quantiles(values: list[tuple[float, float]], qs: Iterable[float]) -> tuple[float, ...]:
    """Quantiles of (value, weight) pairs: the smallest value whose cumulative weight reaches q."""
    ordered = sorted(values)
    total = sum(w for _, w in ordered)
    out = []
    for q in qs:
        acc, pick = 0.0, ordered[-1][0]
        for value, weight in ordered:
            acc += weight
            if acc >= q * total - 1e-12:
                pick = value
                break
        out.append(pick)
    return tuple(out)


def fit_band(errors: dict[str, list[float]]) -> tuple[float, ...]:
    """P10, P25, P50, P75 and P90 of the relative errors of every peak (each row one weight)."""
    pairs = [(e, 1.0) for errs in errors.values() for e in errs]
    if not pairs:
        return (0.0,) * len(BAND_QUANTILES)
    return weighted_quantiles(pairs, BAND_QUANTILES)


def _bisect(fits: Callable[[int], bool]) -> int:
    lo, hi = SEQ_FLOOR, SEQ_CEIL
    if not fits(lo):
        return 0
    if fits(hi):
        return hi
    while hi / lo > 1.01:
        mid = int((lo * hi) ** 0.5)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def longest_seq(knowledge: Knowledge, row: dict[str, str], band: tuple[float, float]) -> tuple[int, int, int]:
    """The longest sequence (to 1%) that fits the row's budget: (by the P90 end, central, by the P10 end)."""
    cache: dict[int, Estimate] = {}

    def central(s: int) -> Estimate:
        if s not in cache:
            cache[s] = estimate(knowledge, row, s)
        return cache[s]

    strict = _bisect(lambda s: central(s).device * (1 + band[1]) <= central(s).usable)
    nominal = _bisect(lambda s: central(s).device <= central(s).usable)
    loose = _bisect(lambda s: central(s).device * (1 + band[0]) <= central(s).usable)
    return strict, nominal, loose


def _label(knowledge: Knowledge, row: dict[str, str]) -> str:
    return (
        f"{label_model(row)} {row['workload']} {row['gpu'] or row['gpu_memory_gb'] + 'GB'} "
        f"x{row['gpu_count']} "
        f"tp{row['tp']} pp{row['pp']} cp{row['cp']} z{row['zero_stage']} "
        f"{row['recompute'] or row_recompute(knowledge, row) + '*'} mb{micro_batch(row)} s{row['seq_len']} "
        f"{row['stack']}"
    )


def _errors_by_source(rows: list[dict[str, str]], estimates: list[Estimate]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for row, est in zip(rows, estimates, strict=True):
        measured = measured_gb(row)
        if measured is not None and row["kind"] == "run":
            out[row["source"]].append(measured / est.on_footing(footing(row)) - 1)
    return out


def held_out_bands(
    errors: dict[str, list[float]], sources: Iterable[str]
) -> dict[str, tuple[tuple[float, float], tuple[float, float]]]:
    """Each source's ((P25, P75), (P10, P90)), fitted on every other source's peaks (never on its own)."""
    out = {}
    for source in set(sources):
        p10, p25, _, p75, p90 = fit_band({s: e for s, e in errors.items() if s != source})
        out[source] = ((p25, p75), (p10, p90))
    return out


def check_all(knowledge: Knowledge, path: Path = CSV_PATH) -> list[Check]:
    """Every row of the CSV against the model, each judged with a band fitted without its source."""
    rows = read_rows(path)
    estimates = [estimate(knowledge, row) for row in rows]
    bands = held_out_bands(_errors_by_source(rows, estimates), (r["source"] for r in rows))
    checks = []
    for row, est in zip(rows, estimates, strict=True):
        band, spread = bands[row["source"]]
        seq: tuple[int | None, int | None, tuple[int, int] | None] = (None, None, None)
        if row["kind"] == "max_seq_len":
            strict, nominal, loose = longest_seq(knowledge, row, band)
            seq = (int(row["seq_len"]), nominal, (strict, max(loose, strict)))
        checks.append(
            Check(
                row["source"],
                _label(knowledge, row),
                row["kind"],
                row["outcome"],
                est.device,
                est.usable,
                est.on_footing(footing(row)),
                measured_gb(row),
                band,
                spread,
                *seq,
            )
        )
    return checks


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _source_line(source: str, checks: list[Check]) -> str:
    """One row of the summary: a source's fit agreement, peak error and longest-sequence error."""
    runs = [c for c in checks if c.kind == "run"]
    verdict, three = _agreement_cells(runs)
    return f"  {source:<19} {verdict:>8} {three:>12}  {_peak_cells(runs)}  {_longest_cells(checks)}"


def _agreement_cells(runs: list[Check]) -> tuple[str, str]:
    """Strict and three-way verdict agreement ('-' without outcomes); three-way counts its 'may not fit'."""
    if not runs:
        return "-", "-"
    maybe = sum(c.verdict3 == "may not fit" for c in runs)
    return (
        f"{sum(c.agrees for c in runs)}/{len(runs)}",
        f"{sum(c.agrees3 for c in runs)}/{len(runs)} ({maybe}?)",
    )


def _peak_cells(runs: list[Check]) -> str:
    """Median and P90 peak |error|, and how many errors fall in the IQR band and in the P10-P90 spread."""
    errs = [abs(c.rel_error) for c in runs if c.rel_error is not None]
    if not errs:
        return f"{'-':>5} {'-':>5} {'-':>7} {'-':>7}"
    iqr = sum(c.in_band for c in runs if c.rel_error is not None)
    p1090 = sum(c.in_spread for c in runs if c.rel_error is not None)
    return (
        f"{statistics.median(errs):5.0%} {_pct(errs, 0.9):5.0%} {iqr:>3}/{len(errs):<3} "
        f"{p1090:>3}/{len(errs):<3}"
    )


def _longest_cells(checks: list[Check]) -> str:
    """Median |error| of the longest sequence, how many within 15%, how many inside the band's range."""
    longest = [c for c in checks if c.seq_error is not None]
    seqs = [abs(c.seq_error) for c in longest if c.seq_error is not None]
    if not seqs:
        return "    -"
    return (
        f"{statistics.median(seqs):5.0%} {sum(x <= 0.15 for x in seqs):>2}/{len(seqs):<2} "
        f"{sum(c.seq_in_range for c in longest):>2}/{len(longest)}"
    )


def summary_lines(checks: list[Check]) -> list[str]:
    """Agreement, peak error and longest-sequence error, by source and overall, with the goals."""
    by_source: dict[str, list[Check]] = defaultdict(list)
    for c in checks:
        by_source[c.source].append(c)
    lines = [
        f"  {'source':<19} {'strict':>8} {'three-way':>12}  "
        f"{'peak |err|: median P90  in IQR in P10-90':<39}  "
        "longest seq: |err| <=15% in IQR"
    ]
    lines += [_source_line(s, group) for s, group in sorted(by_source.items())]
    lines.append(_source_line("all", checks))
    runs = [c for c in checks if c.kind == "run"]
    n = max(len(runs), 1)
    agree, maybe = sum(c.agrees for c in runs) / n, sum(c.verdict3 == "may not fit" for c in runs) / n
    seqs = [abs(c.seq_error) for c in checks if c.seq_error is not None]
    within = sum(s <= 0.15 for s in seqs) / max(len(seqs), 1)
    lines.append(
        f"  goals: fit verdicts {agree:.0%} right strict on {len(runs)} outcomes from {len(by_source)} "
        "sources "
        f"(goal >= 90%), 'may not fit' on {maybe:.0%} of them (goal <= 15%), "
        f"{sum(c.agrees3 for c in runs) / n:.0%} consistent three-way; longest sequence within 15% on "
        f"{within:.0%} of rows; every source judged with a band fitted on the others' peaks"
    )
    return lines


def detail_lines(checks: list[Check]) -> list[str]:
    """One line per row: the central estimate and band, the measurement and the verdicts."""
    out = []
    for c in checks:
        measured = f"{c.measured_gb:6.1f}/{c.predicted_gb:6.1f}" if c.measured_gb is not None else " " * 13
        seq = (
            f" seq {c.predicted_seq}/{c.measured_seq} ({c.seq_error:+.0%}; range {c.seq_range})"
            if c.seq_error is not None
            else ""
        )
        mark = "ok " if c.agrees or c.kind != "run" else ("~  " if c.agrees3 else "XX ")
        out.append(
            f"  {mark}{c.label:<76} {c.central_gb:6.1f} / {c.usable_gb:5.1f} {c.verdict3:<12} "
            f"measured/pred {measured} {c.outcome}{seq}"
        )
    return out


def band_lines(knowledge: Knowledge, path: Path = CSV_PATH) -> list[str]:
    """The band fitted on every source's peaks (what assumptions.toml ships as memory.central_error)."""
    rows = read_rows(path)
    errors = _errors_by_source(rows, [estimate(knowledge, row) for row in rows])
    p10, p25, p50, p75, p90 = fit_band(errors)
    spread, band = knowledge.assumptions.memory["central_error"], knowledge.assumptions.memory["verdict_band"]
    return [
        f"central estimate's relative error on {sum(map(len, errors.values()))} peaks from {len(errors)} "
        f"sources: P10 {p10:+.3f}, P25 {p25:+.3f}, P50 {p50:+.3f}, P75 {p75:+.3f}, P90 {p90:+.3f}",
        f"shipped (knowledge/assumptions.toml): memory.central_error P10 {spread.range[0]:+.3f} P50 "
        f"{spread.value:+.3f} P90 {spread.range[1]:+.3f}; memory.verdict_band P25 {band.range[0]:+.3f} "
        f"P75 {band.range[1]:+.3f}",
    ]


def memory_validation_lines(knowledge: Knowledge | None = None, *, detail: bool = False) -> list[str]:
    """The memory-validation section of `model evaluate`; one line when the CSV is not installed."""
    if not CSV_PATH.is_file():
        return [
            "memory validation: benchmarks/memory_validation.csv is not in this installation "
            "(run from a source checkout)"
        ]
    if knowledge is None:
        from advisor.catalog.loader import load_knowledge

        knowledge = load_knowledge()
    try:
        checks = check_all(knowledge)
    except (AdvisorError, ValueError, KeyError) as exc:
        return [f"memory validation: cannot read {CSV_PATH.name}: {str(exc).splitlines()[0]}"]
    head = [
        f"Memory model against {len(checks)} published or measured runs (benchmarks/memory_validation.csv): "
        "verdicts on the central estimate; each source's band fitted on the other sources' peaks"
    ]
    return head + (detail_lines(checks) if detail else []) + summary_lines(checks)
