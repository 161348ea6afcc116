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
from advisor.learned.efficiency.linear import TYPICAL, distance, plan_of, unknown
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
# How much wider a plan's interval may be per thing of it no training run measured (linear.distance: a stack
# fewer than two sources measured, a GPU no run used, fine-tuning, a mixture of experts, a sequence past the
# attention table's), chosen with the levels. Held out by source and on the development sets (sources the
# training never reads) the runs with each scatter about twice as far around the P50 as the others
# (docs/step-model.md, "The interval's width").
FAR_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)
# A family of sources is held to the band when it has this many sources (its mean over fewer moves too far
# a source: the end-to-end reports).
MIN_FAMILY_SOURCES = 3
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


@dataclass(frozen=True, slots=True, repr=False)
class Measured:
    """The groups (sources) that measured each --stack and each GPU, among some rows."""

    stacks: dict[str, set[str]]
    gpus: dict[str, set[str]]

    def distance(self, s: Sample, without: Collection[str]) -> float:
        """linear.distance() of a run, the groups in without (its own, held out) not counted as measuring."""
        plan = plan_of(s)
        stack = len(self.stacks.get(plan.stack, set()) - set(without))
        return distance(s.features, plan, stack, bool(self.gpus.get(plan.gpu, set()) - set(without)))


def _measured_by(samples: Sequence[Sample], rows: Sequence[int], group: Group) -> Measured:
    """The groups (sources) among rows that measured each --stack (linear.plan_of) and each GPU."""
    out = Measured({}, {})
    for i in rows:
        s = samples[i]
        out.stacks.setdefault(plan_of(s).stack, set()).add(group(s))
        out.gpus.setdefault(plan_of(s).gpu, set()).add(group(s))
    return out


def width(s: Sample, widen: float, far: float = 0.0, distance_: float = 0.0) -> float:
    """How many times the interval's offsets a row's interval spans: 1 + widen x what the step does not know
    of it (linear.unknown) + far x how far it lies from what the other sources measured (linear.distance)."""
    return 1.0 + widen * unknown(s.features) + far * distance_


@dataclass(frozen=True, slots=True, repr=False)
class Development:
    """The development sets' runs (development.py), predicted at the typical family by a model fitted on every
    training row: the interval's choice checks its coverage of them, every source weighing the same."""

    samples: Sequence[Sample]
    typical: dict[int, float]


@dataclass(frozen=True, slots=True, repr=False)
class Widen:
    """The widening of one choice: per unit of linear.unknown(), and per unit of linear.distance()."""

    unknown: float = 0.0
    far: float = 0.0


def _widths(
    samples: Sequence[Sample], rows: Sequence[int], group: Group, widen: Widen, pool: Collection[str]
) -> dict[int, float]:
    """Each row's width, its distance read from the groups of rows other than its own and pool's."""
    measured = _measured_by(samples, rows, group)
    out = {}
    for i in rows:
        far = measured.distance(samples[i], {group(samples[i]), *pool})
        out[i] = width(samples[i], widen.unknown, widen.far, far)
    return out


def _normalised(
    samples: Sequence[Sample],
    typical: dict[int, float],
    group: Group,
    exclude: Collection[str],
    widen: float | Widen,
) -> tuple[list[tuple[float, float]], float]:
    """The held-out log residuals around the typical P50 over each row's width, sorted, with their balanced
    weights (balanced_weights; the groups in exclude left out), and the rows' weighted mean width."""
    rows = [i for i in typical if group(samples[i]) not in exclude]
    weights = balanced_weights(samples, rows, group)
    w = widen if isinstance(widen, Widen) else Widen(widen)
    k = _widths(samples, rows, group, w, ())
    pairs = sorted(((target(samples[i]) - typical[i]) / k[i], weights[i]) for i in rows)
    total = sum(weights.values())
    mean = sum(weights[i] * k[i] for i in rows) / total if total else 1.0
    return pairs, mean


def offsets(
    samples: Sequence[Sample],
    typical: dict[int, float],
    group: Group,
    exclude: Collection[str] = (),
    levels: tuple[float, float] = LEVEL_GRID[0],
    widen: float | Widen = 0.0,
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
    k: dict[int, float],
) -> list[float]:
    """Per family of source, the mean over its groups (sources) of the share of the group's rows its interval
    covers, every group weighing the same: the others' normalised residuals' quantiles (levels) x the row's
    width k."""
    shares: dict[str, list[float]] = {}
    for key, idx in members.items():
        lo, hi = sorted_quantile(others[key], levels[0]), sorted_quantile(others[key], levels[1])
        got = [lo * k[i] - 1e-12 <= resid[i] <= hi * k[i] + 1e-12 for i in idx]
        shares.setdefault(samples[idx[0]].row.source_family, []).append(sum(got) / len(got))
    return [sum(v) / len(v) for f, v in sorted(shares.items()) if len(v) >= MIN_FAMILY_SOURCES]


def _development_cover(
    dev: Development | None, measured: Measured, widen: Widen
) -> tuple[dict[str, list[tuple[float, float]]], float]:
    """The development runs' log residuals and widths by source, and their mean width (sources alike)."""
    if dev is None or not dev.typical:
        return {}, 0.0
    out: dict[str, list[tuple[float, float]]] = {}
    widths: dict[str, list[float]] = {}
    for j, log50 in dev.typical.items():
        s = dev.samples[j]
        k = width(s, widen.unknown, widen.far, measured.distance(s, ()))
        out.setdefault(s.row.origin, []).append((target(s) - log50, k))
        widths.setdefault(s.row.origin, []).append(k)
    return out, sum(sum(v) / len(v) for v in widths.values()) / len(widths)


def _development_share(runs: dict[str, list[tuple[float, float]]], lo: float, hi: float) -> float:
    """The development sources' mean coverage at offsets (lo, hi) x each run's width."""
    shares = [sum(lo * k - 1e-12 <= r <= hi * k + 1e-12 for r, k in v) / len(v) for v in runs.values()]
    return sum(shares) / len(shares)


def _groups(
    samples: Sequence[Sample], typical: dict[int, float], group: Group, exclude: Collection[str]
) -> tuple[list[int], dict[str, list[int]]]:
    """The rows outside the groups excluded, and each group's rows."""
    rows = [i for i in typical if group(samples[i]) not in exclude]
    members: dict[str, list[int]] = {}
    for i in rows:
        members.setdefault(group(samples[i]), []).append(i)
    return rows, members


def levels_for(
    samples: Sequence[Sample],
    typical: dict[int, float],
    group: Group,
    exclude: Collection[str] = (),
    dev: Development | None = None,
) -> tuple[tuple[float, float], Widen]:
    """The LEVEL_GRID pair and the widening (WIDEN_GRID per unit of linear.unknown(), FAR_GRID per unit of
    linear.distance(), read from the other sources' stacks and GPUs) for the interval: each group (source)
    in turn scored against the offsets of the others (split conformal by source, nested inside any group
    already excluded); the narrowest choice
    under which each family's mean coverage over its sources (MIN_FAMILY_SOURCES or more; every source
    weighing the same, so no one source decides its family) and the development sources' (dev: sources the
    training never reads, each weighing the same) lie within FIT_BAND; else the one nearest it (the sum of
    the distances; ties: the narrower, the less widened)."""
    rows, members = _groups(samples, typical, group, exclude)
    keys = sorted(members)
    resid = {i: target(samples[i]) - typical[i] for i in rows}
    weights = balanced_weights(samples, rows, group)
    total = sum(weights.values()) or 1.0
    measured = _measured_by(samples, rows, group)
    terms = _Terms.of(samples, rows, group, keys, measured)
    best: tuple[float, float, float, float, tuple[float, float]] | None = None
    for widen in (Widen(u, f) for u in WIDEN_GRID for f in FAR_GRID):
        k = {i: 1.0 + widen.unknown * terms.unknown[i] + widen.far * terms.own[i] for i in rows}
        others = {key: terms.others(key, resid, widen) for key in keys}
        pairs = sorted((resid[i] / k[i], weights[i]) for i in rows)
        mean = sum(weights[i] * k[i] for i in rows) / total
        runs, dev_mean = _development_cover(dev, measured, widen)
        if runs:
            mean = (mean + dev_mean) / 2.0
        for levels in LEVEL_GRID:
            miss, spread = _miss(samples, resid, members, others, levels, k, pairs, runs)
            rank = (miss, round(spread * mean, 9), widen.unknown, widen.far, levels)
            if best is None or rank < best:
                best = rank
    assert best is not None
    return best[4], Widen(best[2], best[3])


def _miss(
    samples: Sequence[Sample],
    resid: dict[int, float],
    members: dict[str, list[int]],
    others: dict[str, list[tuple[float, float]]],
    levels: tuple[float, float],
    k: dict[int, float],
    pairs: list[tuple[float, float]],
    runs: dict[str, list[tuple[float, float]]],
) -> tuple[float, float]:
    """How far one choice's coverages lie outside FIT_BAND, summed (_covered, and the development sources'
    under the offsets at levels of pairs), and the offsets' spread."""
    lo, hi = sorted_quantile(pairs, levels[0]), sorted_quantile(pairs, levels[1])
    covered = _covered(samples, resid, members, others, levels, k)
    if runs:
        covered.append(_development_share(runs, lo, hi))
    return round(sum(max(FIT_BAND[0] - c, c - FIT_BAND[1], 0.0) for c in covered), 9), hi - lo


@dataclass(frozen=True, slots=True, repr=False)
class _Terms:
    """What each row's width reads, computed once per choice: linear.unknown(), linear.distance() with its own
    group held out, and with each other group held out too (with that group's balanced weights)."""

    unknown: dict[int, float]
    own: dict[int, float]
    by_key: dict[str, dict[int, tuple[float, float]]]
    """Per group held out: each other row's distance and weight."""

    @classmethod
    def of(
        cls,
        samples: Sequence[Sample],
        rows: Sequence[int],
        group: Group,
        keys: Sequence[str],
        measured: Measured,
    ) -> _Terms:
        by_key = {}
        for key in keys:
            rest = [i for i in rows if group(samples[i]) != key]
            w = balanced_weights(samples, rest, group)
            by_key[key] = {i: (measured.distance(samples[i], {group(samples[i]), key}), w[i]) for i in rest}
        return cls(
            {i: unknown(samples[i].features) for i in rows},
            {i: measured.distance(samples[i], {group(samples[i])}) for i in rows},
            by_key,
        )

    def others(self, key: str, resid: dict[int, float], widen: Widen) -> list[tuple[float, float]]:
        """The other groups' residuals over their widths, sorted, with their weights (group key held out)."""
        u, f = widen.unknown, widen.far
        return sorted(
            (resid[i] / (1.0 + u * self.unknown[i] + f * d), w) for i, (d, w) in self.by_key[key].items()
        )


def interval_offsets(
    samples: Sequence[Sample],
    typical: dict[int, float],
    group: Group,
    exclude: Collection[str] = (),
    dev: Development | None = None,
) -> tuple[float, float, Widen]:
    """The interval shown: offsets at the levels and widening chosen (levels_for) on the same rows, and the
    widening."""
    levels, widen = levels_for(samples, typical, group, exclude, dev)
    lo, hi = offsets(samples, typical, group, exclude, levels, widen)
    return lo, hi, widen


def _predictions(
    samples: Sequence[Sample],
    rows: Sequence[int],
    group: Group,
    ho: HeldOut,
    interval_group: Group,
    dev: Development | None = None,
) -> tuple[dict[int, float], dict[int, bool]]:
    """Each row's bounded P50 throughput at its own family, and whether the interval shown covers it."""
    model, covered = {}, {}
    shown: dict[str, tuple[float, float, Widen]] = {}
    measured = _measured_by(samples, list(ho.typical), interval_group)
    for i in rows:
        s, key = samples[i], group(samples[i])
        bounds = ho.bounds[key]
        own = interval_group(s)
        if own not in shown:
            shown[own] = interval_offsets(samples, ho.typical, interval_group, (own,), dev)
        lo, hi, widen = shown[own]
        k = width(s, widen.unknown, widen.far, measured.distance(s, {own, key}))
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
    dev: Development | None = None,
) -> tuple[list[Scores], HeldOut, dict[int, float]]:
    """One held-out scheme on the LLM rows: pooled, then one line per subset (sources, families); and the
    held-out predictions behind them."""
    rows = [i for i, s in enumerate(samples) if s.family == "llm"]
    ho = held_out(samples, rows, group, lam)
    # The interval of a held-out row comes from the other sources' residuals, whatever the scheme.
    model, covered = _predictions(samples, rows, group, ho, by_source, dev)
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
    widen: Widen
    """A plan's interval is (1 + widen.unknown x linear.unknown() + widen.far x linear.distance()) times the
    interval: wider for an eager stack, for the servers beyond one, for each thing no run measured."""
    error: float
    """The source-balanced held-out median error (mean of the per-source medians)."""
    ranks: list[LayoutRank] = field(default_factory=list)
    """Layout-ranking agreement within each source that varies only the layout (held out by source)."""
    coverage: dict[str, float] = field(default_factory=dict)
    """P10-P90 coverage held out by source, each family's mean over its sources (every source weighing the
    same), and the development sources' mean ('development') under the interval shipped."""


def _development(
    samples: Sequence[Sample], lam: Candidate | None, runs: Sequence[Sample]
) -> Development | None:
    """The development runs predicted at the typical family by the estimator fitted on every LLM row."""
    if not runs:
        return None
    llm = [s for s in samples if s.family == "llm"]
    model = fit_linear(llm, lam if lam is not None else choose_lambda(llm)[0])
    return Development(runs, {j: predict_sample(model, s, TYPICAL) for j, s in enumerate(runs)})


def _balanced_coverage(
    loso: Sequence[Scores],
    samples: Sequence[Sample],
    dev: Development | None,
    shipped: tuple[float, float, Widen],
) -> dict[str, float]:
    """Each family's mean coverage over its sources (held out by source), and the development sources'."""
    family = {s.row.origin: s.row.source_family for s in samples}
    by: dict[str, list[float]] = {}
    for x in loso:
        if x.subset in family and x.coverage_p10_p90 is not None:
            by.setdefault(family[x.subset], []).append(x.coverage_p10_p90)
    out = {f: round(sum(v) / len(v), 4) for f, v in by.items()}
    if dev is not None:
        llm = [i for i, s in enumerate(samples) if s.family == "llm"]
        runs, _ = _development_cover(dev, _measured_by(samples, llm, by_source), shipped[2])
        out["development"] = round(_development_share(runs, shipped[0], shipped[1]), 4)
    return out


def llm_evaluation(
    samples: Sequence[Sample],
    families: bool = True,
    lam: Candidate | None = None,
    development: Sequence[Sample] = (),
) -> LlmEvaluation:
    """Leave-one-source-out (lines by family of source and by source), then, when asked, leave-one-family-out
    both ways (fit on vendor tables, score the rest; and the reverse). The estimator is nested unless one is
    given (a user's calibration: the interval only, at the estimator already chosen, for speed). The
    development runs (development.py) are scored under the interval shipped ('development' in coverage),
    never used to choose it: the training is reproducible from knowledge/ alone, as in an installed wheel,
    which has no benchmarks/ (a choice that read them would differ between a checkout and a wheel)."""
    llm = [s for s in samples if s.family == "llm"]
    sources = sorted({s.row.origin for s in llm})
    present = [f for f in FAMILY_ORDER if any(s.row.source_family == f for s in llm)]
    subsets: dict[str, Callable[[Sample], bool]] = {f"family: {f}": _family_is(f) for f in present}
    subsets.update({src: _source_is(src) for src in sources})
    dev = _development(samples, lam, development)
    loso, ho, model = scheme_scores(samples, "source", by_source, subsets, lam, None)
    per_source = [x for x in loso if x.subset in sources]
    error = sum(x.median_ape for x in per_source) / len(per_source)
    scores = loso
    if families:
        sides: dict[str, Callable[[Sample], bool]] = {
            "fit on vendor tables, scored on the rest": _not_vendor,
            "fit on the rest, scored on vendor tables": _vendor,
        }
        lofo, _, _ = scheme_scores(samples, "family", by_vendor, sides, None, None)
        scores = loso + lofo[1:]
    ranks = layout_ranks(samples, model)
    shipped = interval_offsets(samples, ho.typical, by_source, (), None)
    coverage = _balanced_coverage(loso, samples, dev, shipped)
    return LlmEvaluation(scores, shipped[:2], shipped[2], error, ranks, coverage)
