"""Provides the field guide's own figures checked: its worked cost example, its cost table and its
quality-inspection case study, each beside the corrected arithmetic, today's prices and the model's
estimate."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from advisor.catalog.common import Source
from advisor.catalog.loader import Knowledge, _read_toml
from advisor.catalog.storage import storage_cost, storage_price
from advisor.job.inputs import Constraints, Workload
from advisor.question.errors import InputError
from advisor.question.records import validate
from advisor.search.cost import best_offer, guide_cost, node_size_for, usable_offers

HOURS_PER_MONTH = 730.0
CASE_STUDY = "field-guide-case-study"
SCENARIOS: dict[str, str] = {
    CASE_STUDY: "the field guide's quality-inspection case: ResNet-50 on 4x A100, 72 h -> 18 h, "
    "$12,500 -> $3,800 per run, 200 TB SSD cache",
}


@functools.lru_cache(maxsize=4)
def guide_figures(knowledge: Knowledge) -> dict[str, Any]:
    """knowledge/guide.toml: the guide's figures as it states them."""
    return _read_toml(knowledge.root, "guide.toml")


def guide_source(knowledge: Knowledge) -> Source:
    """Where the guide's figures come from."""
    return validate(Source, guide_figures(knowledge)["source"])


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class GuideExample:
    """The guide's worked example: its figures, its arithmetic errors and the corrected result."""

    inputs: dict[str, float]
    stated_gpu_part: float
    gpu_part: float
    gpu_part_with_volatility: float
    storage: float
    stated_total: float
    total: float
    errors: tuple[str, ...]


def guide_example(knowledge: Knowledge) -> GuideExample:
    """($0.98/h x 4 x 72 h) x 1.35 + 1 TB for a month at $0.023/GB-month, as the guide should have computed
    it."""
    w = guide_figures(knowledge)["worked_example"]
    gpu_part = guide_cost(w["usd_per_gpu_hour"], w["gpus"], w["hours"], 1.0, 0, 0, 0)
    storage = guide_cost(0, 0, 0, 1.0, w["storage_gb"], w["storage_usd_per_gb_month"], w["storage_months"])
    total = guide_cost(
        w["usd_per_gpu_hour"],
        w["gpus"],
        w["hours"],
        w["volatility"],
        w["storage_gb"],
        w["storage_usd_per_gb_month"],
        w["storage_months"],
    )
    own = w["stated_gpu_part"] * w["volatility"] + w["storage_usd_per_gb_month"]
    errors = (
        f"{w['usd_per_gpu_hour']:g} x {w['gpus']} x {w['hours']:g} = {gpu_part:.2f}, not "
        f"{w['stated_gpu_part']:.2f}",
        f"even from its own {w['stated_gpu_part']:.2f}: x {w['volatility']:g} + "
        f"{w['storage_usd_per_gb_month']:g} "
        f"= {own:.2f}, not {w['stated_total']:.2f}",
        f"storage: ${w['storage_usd_per_gb_month']:g} is per GB-month (S3 Standard), not per TB-month "
        f"({w['stated_storage_unit']}): {w['storage_gb'] / 1000:g} TB for {w['storage_months']:g} month is "
        f"${storage:.2f}, not ${w['storage_usd_per_gb_month']:g}",
    )
    inputs = {
        k: float(w[k])
        for k in (
            "usd_per_gpu_hour",
            "gpus",
            "hours",
            "volatility",
            "storage_gb",
            "storage_usd_per_gb_month",
            "storage_months",
        )
    }
    return GuideExample(
        inputs=inputs,
        stated_gpu_part=w["stated_gpu_part"],
        gpu_part=round(gpu_part, 4),
        gpu_part_with_volatility=round(gpu_part * w["volatility"], 4),
        storage=round(storage, 4),
        stated_total=w["stated_total"],
        total=round(total, 4),
        errors=errors,
    )


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class TableRow:
    """One row of the guide's cost table beside today's market."""

    name: str
    gpu: str
    gpus: int
    base_usd_month: float
    base_usd_per_gpu_hour: float
    stated_range: tuple[float, float]
    range: tuple[float, float]
    error: str
    market_usd_per_gpu_hour: float | None
    market: str


def cost_table(knowledge: Knowledge) -> list[TableRow]:
    """The guide's monthly base prices as $/GPU-hour, its ranges recomputed, and today's cheapest fresh
    offer."""
    rows = []
    for r in guide_figures(knowledge)["cost_table"]:
        low, high = r["base_usd_month"] * r["volatility_low"], r["base_usd_month"] * r["volatility_high"]
        error = (
            ""
            if (low, high) == (r["stated_low"], r["stated_high"])
            else (f"{r['base_usd_month']:,} x {r['volatility_high']:g} = {high:,.0f}")
        )
        offers = usable_offers(knowledge, knowledge.gpu(r["gpu"]), Constraints())
        best = offers[0] if offers else None
        market = (
            (
                f"{best.provider} {best.instance} ${best.usd_per_gpu_hour:.2f}/GPU-h on-demand, "
                f"{best.date.isoformat()}"
            )
            if best
            else "no fresh on-demand offer"
        )
        rows.append(
            TableRow(
                name=r["name"],
                gpu=r["gpu"],
                gpus=r["gpus"],
                base_usd_month=r["base_usd_month"],
                base_usd_per_gpu_hour=round(r["base_usd_month"] / HOURS_PER_MONTH / r["gpus"], 4),
                stated_range=(r["stated_low"], r["stated_high"]),
                range=(low, high),
                error=error,
                market_usd_per_gpu_hour=round(best.usd_per_gpu_hour, 4) if best else None,
                market=market,
            )
        )
    return rows


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class CaseStudy:
    """The guide's case as stated, what today's prices and the model give for it, and why they differ."""

    stated: dict[str, Any]
    implied_usd_per_gpu_hour_after: float
    implied_usd_per_gpu_hour_before: float
    offer: str
    billed_gpus: int
    today_usd_after: float | None
    today_usd_before: float | None
    cache_storage: str
    cache_usd_run: float
    cache_usd_month: float
    model_images_per_s: float | None
    model_images_after: float | None
    model_speedup_1_to_4: float | None
    differences: tuple[str, ...]


def _model(knowledge: Knowledge, gpu: str, efficiency: Any) -> tuple[float | None, float | None]:
    """ResNet-50 images/s (P50) on 4 GPUs, and the 1 -> 4 GPU speed-up, from the prediction model."""
    from advisor.answer.predict import predict

    work = Workload(model="resnet50")
    four = predict(knowledge, work, gpu, 4, Constraints(), efficiency)
    one = predict(knowledge, work, gpu, 1, Constraints(), efficiency)
    if four.throughput is None or one.throughput is None:
        return None, None
    return four.throughput.value, four.throughput.value / one.throughput.value


CASE_STUDY_STATED = (
    "title",
    "model",
    "gpu",
    "gpus",
    "provider",
    "hours_before",
    "hours_after",
    "cost_before_usd",
    "cost_after_usd",
    "cache_tb",
    "share_training",
    "share_cache",
    "share_monitoring",
    "accuracy_before",
    "accuracy_after",
    "note",
)
"""The guide's own figures of the case study, repeated as it states them."""


def _case_differences(
    c: dict[str, Any],
    gpu_id: str,
    choice: Any,
    after: float | None,
    cache: Any,
    run_cache: float,
    speedup: float | None,
) -> list[str]:
    """Where the guide's case study and today's figures part, one sentence each."""
    cache_gb = c["cache_tb"] * 1000.0
    implied_after = c["cost_after_usd"] / (c["gpus"] * c["hours_after"])
    implied_before = c["cost_before_usd"] / (c["gpus"] * c["hours_before"])
    return [
        f"the guide's ${c['cost_after_usd']:,} for {c['gpus']} GPUs x {c['hours_after']} h is "
        f"${implied_after:.2f}/GPU-h (${implied_before:.2f} before); its {c['share_training']:.0%} training "
        f"share "
        f"is ${c['cost_after_usd'] * c['share_training'] / (c['gpus'] * c['hours_after']):.2f}/GPU-h",
        f"today: {c['gpus']} x {gpu_id} cost ${after:,.0f} for {c['hours_after']} h on the cheapest fresh "
        f"offer "
        f"({choice.billed_gpus} GPUs billed), about {c['cost_after_usd'] / after:.0f}x less than the guide"
        if choice is not None and after
        else f"today: no fresh on-demand offer of {gpu_id}",
        f"the {c['cache_tb']} TB SSD cache on {cache.name} (${cache.usd_per_gb_month:g}/GB-month) costs "
        f"${run_cache:,.0f} for the {c['hours_after']} h run but ${cache_gb * cache.usd_per_gb_month:,.0f} a "
        f"month "
        f"kept; the guide's {c['share_cache']:.0%} share (${c['cost_after_usd'] * c['share_cache']:,.0f}) "
        f"fits neither",
        "the guide's 72 h -> 18 h (4x) is the 1 -> 4 GPU step if anything: the model gives "
        f"{speedup:.2f}x for ResNet-50 from 1 to 4 x {gpu_id}"
        if speedup
        else "no model estimate for this GPU",
        "the guide gives no image count, epochs or instance type, and EC2 has no 4-GPU A100 instance "
        "(p4d.24xlarge has 8): the images per run are what the model says 4 GPUs process in 18 h",
    ]


def case_study(knowledge: Knowledge, efficiency: Any = None) -> CaseStudy:
    """The quality-inspection case: the guide's figures, today's cheapest fresh offer and the model's
    speed."""
    c = guide_figures(knowledge)["case_study"]
    gpu = knowledge.gpu(c["gpu"])
    offers = usable_offers(knowledge, gpu, Constraints())
    choice = best_offer(offers, c["gpus"], node_size_for(gpu, offers)) if offers else None
    cache = storage_price(knowledge, c["provider"], c["cache_kind"])
    cache_gb = c["cache_tb"] * 1000.0
    rate, speedup = _model(knowledge, gpu.id, efficiency)
    implied_after = c["cost_after_usd"] / (c["gpus"] * c["hours_after"])
    implied_before = c["cost_before_usd"] / (c["gpus"] * c["hours_before"])
    after = choice.usd_per_hour * c["hours_after"] if choice else None
    before = choice.usd_per_hour * c["hours_before"] if choice else None
    run_cache = storage_cost(cache, cache_gb, c["hours_after"])
    differences = _case_differences(c, gpu.id, choice, after, cache, run_cache, speedup)
    return CaseStudy(
        stated={k: c[k] for k in CASE_STUDY_STATED},
        implied_usd_per_gpu_hour_after=round(implied_after, 2),
        implied_usd_per_gpu_hour_before=round(implied_before, 2),
        offer=(
            f"{choice.offer.provider} {choice.offer.instance} x{choice.instances} at "
            f"${choice.offer.usd_per_gpu_hour:.2f}/GPU-h, {choice.offer.date.isoformat()}"
        )
        if choice
        else "none",
        billed_gpus=choice.billed_gpus if choice else 0,
        today_usd_after=after,
        today_usd_before=before,
        cache_storage=f"{cache.name} [{cache.source}]",
        cache_usd_run=round(run_cache, 2),
        cache_usd_month=round(cache_gb * cache.usd_per_gb_month, 2),
        model_images_per_s=rate,
        model_images_after=rate * c["hours_after"] * 3600 if rate else None,
        model_speedup_1_to_4=speedup,
        differences=tuple(differences),
    )


def scenario_inputs(knowledge: Knowledge, name: str, efficiency: Any = None) -> tuple[Workload, Constraints]:
    """A named scenario as recommend inputs (the UI preset reads this): the case study's model, GPU, count and
    200 TB data set, with the images per run the model says 4 GPUs process in the guide's 18 h."""
    if name != CASE_STUDY:
        raise InputError(
            field="scenario", value=name, problem="is not a known scenario", accepted=", ".join(SCENARIOS)
        )
    c = guide_figures(knowledge)["case_study"]
    rate, _ = _model(knowledge, c["gpu"], efficiency)
    samples = round(rate * c["hours_after"] * 3600) if rate else 1_281_167
    workload = Workload(
        model=c["model"], kind="pretrain", samples=samples, epochs=1, dataset_gb=c["cache_tb"] * 1000.0
    )
    return workload, Constraints(gpus=(c["gpu"],), max_gpus=c["gpus"], providers=(c["provider"],))
