"""Provides the held-out evaluation of the LLM efficiency model as it ships (fit, bounds and interval), by
source and by family of sources, against the constant-MFU and physical baselines on the same folds.

Every figure is held out: a fold's model, its estimator (chosen by leave-one-source-out among the fold's own
training rows: the physical one or the ridge at a penalty), its bounds and its interval come from the other
rows only. A row is scored at its own family
(a vendor table's run against the model's vendor figure), and its interval is the one a user is shown:
around the typical P50, from the other sources' held-out residuals, every family of source weighing the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from advisor.learned.efficiency.bounds_fit import fit_bounds, where_of
from advisor.learned.efficiency.evaluate import (
    Scores,
    baselines,
    kendall_tau,
    layout_groups,
    score_line,
    sorted_quantile,
    target,
)
from advisor.learned.efficiency.linear import TYPICAL, unknown
from advisor.learned.efficiency.linear_fit import (
    Candidate,
    choose_lambda,
    fit_linear,
    is_vendor,
    predict_sample,
)
from advisor.learned.efficiency.samples import Sample

Group = Callable[[Sample], str]
FAMILY_ORDER = ("vendor", "paper", "report", "independent")
# The residual quantiles the interval shown may span (its P10 and P90 labels), lower and upper chosen apart:
# the narrowest pair under which the sources' mean coverage (every source weighing the same; each kind of
# plan, levels_for), each source held out from the residuals that set its interval, lies within FIT_BAND;
# failing that, the pair nearest the band. Why quantiles wider than the 10th-90th may be needed: a new
# source sits off the others as a whole (its software, its cluster, what it counts), so the per-row spread of
# the others understates where it falls; why apart: tuned vendor tables sit above the typical P50 and
# independent runs spread below it.
LOWER_LEVELS = (0.025, 0.05, 0.075, 0.10, 0.15, 0.20)
UPPER_LEVELS = (0.80, 0.85, 0.90, 0.925, 0.95, 0.975)
LEVEL_GRID = tuple((lo, hi) for lo in LOWER_LEVELS for hi in UPPER_LEVELS)
# How much wider a plan's interval may be per unit of what the step does not know of it (linear.unknown: an
# eager stack; the servers it spans), chosen with the levels. On the shipped runs, eager stacks' runs
# (DeepSpeed and the Hugging Face Trainer over eager modules, fms-fsdp) scatter about twice as far around the
# P50 as compiled or Megatron-style stacks' (median absolute residual 0.23 against 0.11), and nanotron's runs
# at 256-512 GPUs five times as far as at 8-64 (0.48-1.36 below their P50). The spread of the composed
# step's own rates (its extrapolated, scaled or fallback table answers, weighted by their seconds) was tried
# too: it does not predict the residual (MosaicML's runs lean most on it and sit tightest), so it is not read.
WIDEN_GRID = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0)
COVER_BAND = (0.75, 0.90)
# What the choice asks of the sources' mean coverage, each held out from the residuals that set its interval:
# a new source sits off the others as a whole, so its coverage runs below theirs; aiming five points inside
# the band's lower edge keeps it in the band.
FIT_BAND = (COVER_BAND[0] + 0.05, COVER_BAND[1])


def by_source(s: Sample) -> str:
    """The held-out-source grouping: the repository of the row (every commit of it), or the user's file."""
    return s.row.origin


def by_vendor(s: Sample) -> str:
    """The held-out-family grouping: vendor tables against every other kind of source."""
    return "vendor tables" if is_vendor(s) else "papers, reports, independent"


@dataclass(slots=True, repr=False)
class HeldOut:
    """Held-out log predictions of LLM rows: at the row's own family and at the typical one."""

    own: dict[int, float]
    typical: dict[int, float]
    bounds: dict[str, object]
    """Per held-out group, the bounds fitted on the other rows."""


def held_out(
    samples: Sequence[Sample], rows: Sequence[int], group: Group, lam: Candidate | None = None
) -> HeldOut:
    """Refit per held-out group, predicting each group's rows from the others; the estimator nested (chosen
    among each fold's training rows) unless one is given."""
    out = HeldOut({}, {}, {})
    for key in sorted({group(samples[i]) for i in rows}):
        test = [i for i in rows if group(samples[i]) == key]
        train = [samples[i] for i in rows if group(samples[i]) != key]
        if lam is None:
            lam_fold, _ = choose_lambda(train)
        else:
            lam_fold = lam
        model = fit_linear(train, lam_fold)
        for i in test:
            out.own[i] = predict_sample(model, samples[i])
            out.typical[i] = predict_sample(model, samples[i], TYPICAL)
        out.bounds[key] = fit_bounds([s for s in samples if group(s) != key])
    return out


def balanced_weights(samples: Sequence[Sample], rows: Sequence[int], group: Group) -> dict[int, float]:
    """Every family of source (vendor tables, papers, reports, independent teams) weighs the same; within
    each family, every group (source) weighs the same: the interval is to hold on every family, not on the
    one with the most rows."""
    families: dict[str, dict[str, int]] = {}
    for i in rows:
        counts = families.setdefault(samples[i].row.source_family, {})
        counts[group(samples[i])] = counts.get(group(samples[i]), 0) + 1
    out = {}
    for i in rows:
        counts = families[samples[i].row.source_family]
        out[i] = 1.0 / (len(families) * len(counts) * counts[group(samples[i])])
    return out


def width(s: Sample, widen: float) -> float:
    """How many times the interval's offsets a row's interval spans: 1 + widen x what the step does not know
    of it (linear.unknown)."""
    return 1.0 + widen * unknown(s.features)


def _normalised(
    samples: Sequence[Sample],
    typical: dict[int, float],
    group: Group,
    exclude: Collection[str],
    widen: float,
) -> tuple[list[tuple[float, float]], float]:
    """The held-out log residuals around the typical P50 over each row's width, sorted, with their balanced
    weights (balanced_weights; the groups in exclude left out), and the rows' weighted mean width."""
    rows = [i for i in typical if group(samples[i]) not in exclude]
    weights = balanced_weights(samples, rows, group)
    pairs = sorted(((target(samples[i]) - typical[i]) / width(samples[i], widen), weights[i]) for i in rows)
    total = sum(weights.values())
    mean = sum(weights[i] * width(samples[i], widen) for i in rows) / total if total else 1.0
    return pairs, mean


def offsets(
    samples: Sequence[Sample],
    typical: dict[int, float],
    group: Group,
    exclude: Collection[str] = (),
    levels: tuple[float, float] = LEVEL_GRID[0],
    widen: float = 0.0,
) -> tuple[float, float]:
    """The quantiles (levels) of held-out log residuals around the typical P50, each over its row's width
    (balanced_weights), the groups in exclude left out: a row's interval is these offsets x its width."""
    pairs, _ = _normalised(samples, typical, group, exclude, widen)
    return sorted_quantile(pairs, levels[0]), sorted_quantile(pairs, levels[1])


def _covered(
    samples: Sequence[Sample],
    resid: dict[int, float],
    members: dict[str, list[int]],
    others: dict[str, list[tuple[float, float]]],
    levels: tuple[float, float],
    widen: float,
) -> list[float]:
    """Per kind of plan (kind_of: what the step knows all of, what it does not), the mean over groups
    (sources) of the share of the group's rows of that kind its interval covers, every group weighing the
    same: the others' normalised residuals' quantiles (levels) x the row's width."""
    shares: dict[bool, list[float]] = {}
    for key, idx in members.items():
        lo, hi = sorted_quantile(others[key], levels[0]), sorted_quantile(others[key], levels[1])
        inside: dict[bool, list[bool]] = {}
        for i in idx:
            k = width(samples[i], widen)
            inside.setdefault(kind_of(samples[i]), []).append(lo * k - 1e-12 <= resid[i] <= hi * k + 1e-12)
        for kind, got in inside.items():
            shares.setdefault(kind, []).append(sum(got) / len(got))
    return [sum(v) / len(v) for _, v in sorted(shares.items())]


def kind_of(s: Sample) -> bool:
    """Whether the step does not know all of a plan (linear.unknown() > 0: an eager stack, more than one
    server): the two kinds of plan the interval is to cover alike, each by its own sources."""
    return unknown(s.features) > 0.0


def levels_for(
    samples: Sequence[Sample], typical: dict[int, float], group: Group, exclude: Collection[str] = ()
) -> tuple[tuple[float, float], float]:
    """The LEVEL_GRID pair and WIDEN_GRID widening for the interval: each group (source) in turn scored
    against the offsets of the others (split conformal by source, nested inside any group already excluded),
    and the narrowest pair under which, for each kind of plan (kind_of), the groups' mean coverage, every
    group weighing the same, lies within FIT_BAND; else the one nearest it (the sum of the kinds' distances;
    ties: the narrower, the less widened). Why each source and not each family held to the band: a family's
    coverage is set by its one or two sources furthest off (nanotron's 256-512 GPU runs, stas00's offloaded
    DeepSpeed runs), and widening every eager or multi-server plan until those were covered (stop 38: 7x)
    over-covered the development sets (94-98%) at 11-18x from P10 to P90 (docs/accuracy.md)."""
    rows = [i for i in typical if group(samples[i]) not in exclude]
    keys = sorted({group(samples[i]) for i in rows})
    resid = {i: target(samples[i]) - typical[i] for i in rows}
    members = {key: [i for i in rows if group(samples[i]) == key] for key in keys}
    best: tuple[float, float, float, tuple[float, float]] | None = None
    for widen in WIDEN_GRID:
        others = {key: _normalised(samples, typical, group, (*exclude, key), widen)[0] for key in keys}
        pairs, mean = _normalised(samples, typical, group, exclude, widen)
        for levels in LEVEL_GRID:
            covered = _covered(samples, resid, members, others, levels, widen)
            miss = sum(max(FIT_BAND[0] - c, c - FIT_BAND[1], 0.0) for c in covered)
            spread = (sorted_quantile(pairs, levels[1]) - sorted_quantile(pairs, levels[0])) * mean
            rank = (round(miss, 9), round(spread, 9), widen, levels)
            if best is None or rank < best:
                best = rank
    assert best is not None
    return best[3], best[2]


def interval_offsets(
    samples: Sequence[Sample], typical: dict[int, float], group: Group, exclude: Collection[str] = ()
) -> tuple[float, float, float]:
    """The interval shown: offsets at the levels and widening chosen (levels_for) on the same rows, and the
    widening."""
    levels, widen = levels_for(samples, typical, group, exclude)
    lo, hi = offsets(samples, typical, group, exclude, levels, widen)
    return lo, hi, widen


def _predictions(
    samples: Sequence[Sample], rows: Sequence[int], group: Group, ho: HeldOut, interval_group: Group
) -> tuple[dict[int, float], dict[int, bool]]:
    """Each row's bounded P50 throughput at its own family, and whether the interval shown covers it."""
    model, covered = {}, {}
    shown: dict[str, tuple[float, float, float]] = {}
    for i in rows:
        s, key = samples[i], group(samples[i])
        bounds = ho.bounds[key]
        own = interval_group(s)
        if own not in shown:
            shown[own] = interval_offsets(samples, ho.typical, interval_group, (own,))
        lo, hi, widen = shown[own]
        k = width(s, widen)
        q = (lo * k, hi * k)
        where = where_of(s)
        _, p50, _, _ = bounds.interval(ho.own[i], q, where)  # type: ignore[attr-defined]
        p10, _, p90, _ = bounds.interval(ho.typical[i], q, where)  # type: ignore[attr-defined]
        model[i] = p50 * s.sol
        covered[i] = p10 - 1e-12 <= s.efficiency <= p90 + 1e-12
    return model, covered


def scheme_scores(
    samples: Sequence[Sample],
    scheme: str,
    group: Group,
    subsets: dict[str, Callable[[Sample], bool]],
    lam: Candidate | None = None,
) -> tuple[list[Scores], HeldOut, dict[int, float]]:
    """One held-out scheme on the LLM rows: pooled, then one line per subset (sources, families); and the
    held-out predictions behind them."""
    rows = [i for i, s in enumerate(samples) if s.family == "llm"]
    ho = held_out(samples, rows, group, lam)
    # The interval of a held-out row comes from the other sources' residuals, whatever the scheme.
    model, covered = _predictions(samples, rows, group, ho, by_source)
    typical = {i: math.exp(ho.typical[i]) * samples[i].sol for i in rows}
    const, phys, prev = baselines(samples, rows, group, "llm")
    folds = len(ho.bounds)

    def line(subset: str, idx: list[int]) -> Scores:
        return score_line(
            "llm", scheme, subset, folds, samples, idx, model, const, phys, covered, typical, prev
        )

    out = [line("all", rows)]
    for name, keep in subsets.items():
        idx = [i for i in rows if keep(samples[i])]
        if idx:
            out.append(line(name, idx))
    return out, ho, model


@dataclass(frozen=True, slots=True, repr=False)
class LayoutRank:
    """Kendall's tau between predicted and measured per-GPU throughput within one source's group of runs that
    vary only the layout: the model (held out by source), the composed step x a constant, the previous
    estimator (the speed of light x a constant)."""

    group: str
    rows: int
    model: float
    composed: float
    previous: float


def layout_ranks(samples: Sequence[Sample], model: dict[int, float]) -> list[LayoutRank]:
    """LayoutRank of every group of a source that varies only the layout (a constant factor does not change
    an order: the baselines' taus are those of their steps)."""
    out = []
    for label, idx in sorted(layout_groups(samples, list(model)).items()):
        measured = [samples[i].row.throughput for i in idx]
        out.append(
            LayoutRank(
                label,
                len(idx),
                kendall_tau([model[i] for i in idx], measured),
                kendall_tau([samples[i].sol for i in idx], measured),
                kendall_tau([samples[i].old_sol or samples[i].sol for i in idx], measured),
            )
        )
    return out


def _family_is(family: str) -> Callable[[Sample], bool]:
    return lambda s: s.row.source_family == family


def _source_is(source: str) -> Callable[[Sample], bool]:
    return lambda s: s.row.origin == source


def _vendor(s: Sample) -> bool:
    return bool(is_vendor(s))


def _not_vendor(s: Sample) -> bool:
    return not is_vendor(s)


@dataclass(frozen=True, slots=True, repr=False)
class LlmEvaluation:
    """The LLM rows' held-out scores, and what the shipped model takes from the same folds."""

    scores: list[Scores]
    interval: tuple[float, float]
    """P10 and P90 log offsets around the typical P50: every source's held-out residuals, balanced."""
    widen: float
    """A plan's interval is (1 + widen x linear.unknown()) times the interval: wider for an eager stack and
    for the servers it spans beyond one."""
    error: float
    """The source-balanced held-out median error (mean of the per-source medians)."""
    ranks: list[LayoutRank] = field(default_factory=list)
    """Layout-ranking agreement within each source that varies only the layout (held out by source)."""


def llm_evaluation(
    samples: Sequence[Sample], families: bool = True, lam: Candidate | None = None
) -> LlmEvaluation:
    """Leave-one-source-out (lines by family of source and by source), then, when asked, leave-one-family-out
    both ways (fit on vendor tables, score the rest; and the reverse). The estimator is nested unless one is
    given (a user's calibration: the interval only, at the estimator already chosen, for speed)."""
    llm = [s for s in samples if s.family == "llm"]
    sources = sorted({s.row.origin for s in llm})
    present = [f for f in FAMILY_ORDER if any(s.row.source_family == f for s in llm)]
    subsets: dict[str, Callable[[Sample], bool]] = {f"family: {f}": _family_is(f) for f in present}
    subsets.update({src: _source_is(src) for src in sources})
    loso, ho, model = scheme_scores(samples, "source", by_source, subsets, lam)
    per_source = [x for x in loso if x.subset in sources]
    error = sum(x.median_ape for x in per_source) / len(per_source)
    scores = loso
    if families:
        sides: dict[str, Callable[[Sample], bool]] = {
            "fit on vendor tables, scored on the rest": _not_vendor,
            "fit on the rest, scored on vendor tables": _vendor,
        }
        lofo, _, _ = scheme_scores(samples, "family", by_vendor, sides)
        scores = loso + lofo[1:]
    ranks = layout_ranks(samples, model)
    lo, hi, widen = interval_offsets(samples, ho.typical, by_source)
    return LlmEvaluation(scores, (lo, hi), widen, error, ranks)
