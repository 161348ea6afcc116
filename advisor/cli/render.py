"""Provides the CLI's text renderings of catalogues, predictions, reports and the checklist."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from advisor.catalog.gpus import PRICE_OLD_MONTHS
from advisor.cli.hints import assumed_text
from advisor.cli.output import table
from advisor.question.fields import flag_of
from advisor.question.units import fmt_hours, human

if TYPE_CHECKING:
    from advisor.answer.predict import Prediction
    from advisor.answer.report import MemoryOut, Report
    from advisor.answer.step_out import StepBreakdown
    from advisor.catalog import Knowledge
    from advisor.catalog.checklist import ChecklistEntry
    from advisor.catalog.gpus import Price
    from advisor.catalog.prices import Offer
    from advisor.ops.plan import OpsPlan
    from advisor.ops.tco import TcoOut


def _f(x: float | None, spec: str = ".0f") -> str:
    return "-" if x is None else format(x, spec)


def gpus_table(k: Knowledge) -> str:
    """The GPU catalogue."""
    rows = []
    for g in k.gpus:
        t = g.tflops
        link = (
            f"{g.interconnect.kind} {_f(g.interconnect.gbs)}" if g.interconnect.gbs else g.interconnect.kind
        )
        price = _price_cell(g.price) if g.price else "-"
        rows.append(
            [
                g.id,
                g.name,
                f"{g.memory_gb:g}",
                _f(g.memory_bw_gbs),
                _f(t.fp32, ".1f"),
                _f(t.tf32, ".0f"),
                _f(t.bf16 or t.fp16, ".0f"),
                _f(t.fp8, ".0f"),
                _f(g.tdp_w),
                link,
                price,
            ]
        )
    head = [
        "id",
        "name",
        "GB",
        "GB/s",
        "fp32",
        "tf32",
        "16-bit",
        "fp8",
        "W",
        "link (GB/s)",
        "price (written)",
    ]
    old = sum(1 for g in k.gpus if g.price and g.price.is_old())
    return (
        table(head, rows, right=range(2, 9))
        + "\n\nTFLOPS are dense peaks (no sparsity). Each purchase price "
        f"is dated when its source wrote it; {old} are older than {PRICE_OLD_MONTHS:g} months (marked old: "
        "tco flags them). "
        f"Catalogue {k.catalogue_version}; every figure's source: gpu-advisor gpus --format json"
    )


def _price_cell(price: Price) -> str:
    """'$9,938 2023-01-12 old' (old = older than PRICE_OLD_MONTHS, as stale offers are flagged)."""
    return f"${price.usd:,.0f} {price.date.isoformat()}" + (" old" if price.is_old() else "")


def models_table(k: Knowledge) -> str:
    """The model catalogue."""
    rows = []
    for m in k.models:
        shape = f"{m.layers}x{m.hidden}" if m.layers and m.hidden else "-"
        heads = f"{m.heads}/{m.kv_heads}" if m.heads else "-"
        unit = m.throughput_unit or "tokens/s"
        moe = f"{m.experts}x top-{m.experts_per_token}" if m.experts > 1 else ""
        rows.append(
            [m.id, m.kind, human(m.params), shape, heads, m.max_seq_len or m.seq_len or "-", unit, moe]
        )
    return table(
        ["id", "kind", "params", "layers x hidden", "heads/kv", "context", "unit", "experts"],
        rows,
        right=(2,),
    )


def prices_table(
    offers: Sequence[Offer], flags: dict[int, list[str]] | None = None, max_age: float = 12.0
) -> str:
    """Cloud offers: current ones cheapest per GPU first, then superseded and stale ones; each with its
    date."""
    flags = flags or {}
    order = sorted(offers, key=lambda o: (o.gpu, bool(flags.get(id(o))), o.usd_per_gpu_hour))
    rows = [
        [
            o.gpu,
            o.provider,
            o.region,
            o.instance,
            o.gpus,
            o.pricing,
            f"{o.usd_per_hour:.2f}",
            f"{o.usd_per_gpu_hour:.2f}",
            o.date.isoformat(),
            o.source,
            "; ".join((["GPU only"] if not o.includes_host else []) + flags.get(id(o), [])),
        ]
        for o in order
    ]
    out = table(
        [
            "gpu",
            "provider",
            "region",
            "instance",
            "GPUs",
            "pricing",
            "$/h",
            "$/GPU-h",
            "as of",
            "source",
            "flags",
        ],
        rows,
        right=(4, 6, 7),
    )
    stale = sum(1 for o in offers if any(f.startswith("stale") for f in flags.get(id(o), [])))
    return (
        out
        + (
            f"\n\n{stale} offer(s) older than {max_age:g} months are not used by recommend "
            "(--max-price-age to change)."
            if stale
            else ""
        )
        + snapshot_note(offers)
    )


def snapshot_note(offers: Sequence[Offer]) -> str:
    """When the listed prices were taken (each offer is dated by its source), newest per provider, and how
    to refresh them."""
    newest: dict[str, str] = {}
    for o in offers:
        newest[o.provider] = max(newest.get(o.provider, ""), o.date.isoformat())
    if not newest:
        return ""
    dates = ", ".join(f"{p} {d}" for p, d in sorted(newest.items()))
    return (
        f"\n\nPrices as of (newest offer per provider, dated by its source): {dates}. "
        "Refresh: gpu-advisor prices update (reads SkyPilot's current catalogue into your data directory; "
        "the shipped snapshot stays as the fallback)."
    )


def _interval(p10: float, p50: float, p90: float, fmt: str = ",.1f") -> str:
    return f"{format(p50, fmt)} ({format(p10, fmt)}-{format(p90, fmt)})"


def _memory_range(m: MemoryOut) -> str:
    """'43.3 GB (39.1-47.5, P10-P90)': the central estimate and the measured error band around it (none
    where the figure is an allocation, as a serving engine's KV cache, not an estimate)."""
    if round(m.per_gpu_gb_low, 1) == round(m.per_gpu_gb_high, 1):
        return f"{m.per_gpu_gb:.1f} GB"
    return f"{m.per_gpu_gb:.1f} GB ({m.per_gpu_gb_low:.1f}-{m.per_gpu_gb_high:.1f}, P10-P90)"


def prediction_text(p: Prediction) -> str:
    """One prediction as text."""
    lines = [f"{p.model} ({p.workload}) on {p.gpu} x{p.count}, {p.precision}: {p.parallelism}"]
    if p.throughput is None and p.refusal not in (None, "memory"):
        lines.append(f"refused ({p.refusal}): {p.notes[0] if p.notes else 'no layout runs'}")
    elif p.throughput is None:
        lines.append(
            f"does not fit: {_memory_range(p.memory)} per GPU needed, {p.memory.usable_gb:.1f} usable "
            f"of {p.memory.capacity_gb:.1f} (largest: {p.memory.dominant})"
        )
    else:
        t = p.throughput
        lines.append(f"throughput  {_interval(t.p10, t.value, t.p90, ',.0f')} {t.unit}  (P50, P10-P90)")
        if p.step_time_s:
            s = p.step_time_s
            lines.append(f"step time   {_interval(s.p10, s.p50, s.p90, '.3g')} s")
        if p.serving_ttft_ms and p.serving_tpot_ms:
            ttft, tpot = p.serving_ttft_ms, p.serving_tpot_ms
            lines.append(
                f"first token {_interval(ttft.p10, ttft.p50, ttft.p90, ',.0f')} ms, "
                f"per token {_interval(tpot.p10, tpot.p50, tpot.p90, ',.1f')} ms"
            )
        if p.serving_load is not None:
            lines += load_lines(p.serving_load)
        e = p.efficiency
        if e:
            lines.append(
                f"efficiency  {_interval(e.p10, e.p50, e.p90, '.0%')} of speed of light "
                f"({p.speed_of_light:,.0f} {t.unit}), {p.bound} bound; {p.efficiency_source}"
            )
        if p.goodput is not None:
            g = p.goodput
            lines.append(
                f"goodput     {g.fraction:.1%} of wall time is useful: an interruption every "
                f"{g.mtbf_h:,.1f} h, checkpoint {g.checkpoint_s:,.0f} s "
                f"every {g.checkpoint_interval_h * 60:,.0f} min, restart {g.restart_h:g} h"
            )
        lines.append(
            f"memory      {p.memory.verdict}: {_memory_range(p.memory)} per GPU of {p.memory.usable_gb:.1f} "
            f"usable (largest: {p.memory.dominant})"
        )
    lines += ["  " + f"{k:<15} {v:8.2f} GB" for k, v in p.memory.breakdown.items()]
    if p.memory.host_gb:
        lines.append(f"  {'host memory':<15} {p.memory.host_gb:8.2f} GB per GPU (offloaded)")
    if p.step_breakdown is not None:
        lines += breakdown_lines(p.step_breakdown)
    lines += configuration_lines(p.configuration, p.alternatives)
    lines += [f"assumed: {assumed_text(a)}" for a in p.assumed] + [f"note: {n}" for n in p.notes]
    return "\n".join(lines)


def load_lines(load: Any) -> list[str]:
    """The stated load's figures: the loop, running and waiting requests, latency percentiles."""
    kind = {
        "closed": f"closed loop, {load.in_flight_per_replica} requests in flight per replica",
        "burst": f"a burst of {load.in_flight_per_replica} prompts per replica sent at once",
    }.get(load.loop, "open loop, Poisson arrivals")
    lines = [
        f"load        {kind}: {load.requests_per_s:,.2f} req/s, {load.output_tok_s:,.0f} output tokens/s; "
        f"{load.running_per_replica:,.1f} running and {load.waiting_per_replica:,.1f} waiting per replica"
    ]
    for name, pct, unit, fmt in (
        ("TTFT", load.ttft_ms, "ms", ",.0f"),
        ("TPOT", load.tpot_ms, "ms", ",.1f"),
        ("ITL", load.itl_ms, "ms", ",.1f"),
        ("end-to-end", load.e2e_s, "s", ",.2f"),
    ):
        lines.append(
            f"  {name:<11} P50 {format(pct.p50, fmt)}  P90 {format(pct.p90, fmt)}  "
            f"P99 {format(pct.p99, fmt)}  mean {format(pct.mean, fmt)} {unit}"
        )
    return lines


def breakdown_lines(b: StepBreakdown) -> list[str]:
    """The step by operation class, each figure with its basis and source (the JSON keeps sources whole)."""
    lines = [
        f"step by operation (P50 {b.step_s:,.3g} s; composed from measured operations {b.composed_s:,.3g} s, "
        f"paced by {b.slowest_stage}; exposed communication {b.exposed_comm_s:,.3g} s):"
    ]
    for part in b.parts:
        note = f"; {part.note}" if part.note else ""
        source = part.source if len(part.source) <= 80 else part.source[:77] + "..."
        lines.append(
            f"  {part.op:<25} {part.seconds:>9.3g} s {part.share:>6.1%}  {part.basis}: {source}{note}"
        )
    return lines + [f"  note: {n}" for n in b.notes]


def _marks(v: Any) -> str:
    """' (given)', ' (given; dp 1: nothing to shard...)', or nothing for a chosen value without a note."""
    marks = [m for m in ("" if v.source == "chosen" else v.source, v.note) if m]
    return f" ({'; '.join(marks)})" if marks else ""


def configuration_lines(config: dict[str, Any], alternatives: Sequence[Any]) -> list[str]:
    """'configuration: tp 8 (given), pp 8 (given), ...' and the runner-up layouts with their cost in time."""
    if not config:
        return []
    parts = [f"{k} {v.value}{_marks(v)}" for k, v in config.items()]
    lines = [
        textwrap.fill(
            "configuration: " + ", ".join(parts) + "  [unmarked: chosen]", width=110, subsequent_indent="  "
        )
    ]
    for alt in alternatives:
        lines.append(
            f"  instead: {alt.parallelism}, micro-batch {alt.layout.micro_batch}: "
            f"step {alt.step_time_s:.3g} s ({alt.slower - 1:+.0%}), {alt.memory_per_gpu_gb:.0f} GB per GPU"
        )
    return lines


def report_text(r: Report) -> str:
    """A recommendation as text: plans, the front, why-nots, advice."""
    j = r.job
    head = f"{j.model_name} — {j.kind}, {human(j.params)} parameters"
    if j.total_items:
        head += f", {human(j.total_items)} {j.unit.removesuffix('/s')}"
    lines = [head]
    lines += [f"  assumed: {assumed_text(a)}" for a in j.assumed]
    lines.append("")
    if r.plans:
        lines += _plans_lines(r)
    else:
        lines.append("No plan fits.")
        if r.suggestions:
            lines += ["What would:"] + [f"  - {s.phrase(flag_of(s.field))}" for s in r.suggestions]
    if r.why_not:
        lines += ["", "Why not:"] + [f"  - {w}" for w in r.why_not]
    lines += [f"note: {assumed_text(n)}" for n in r.notes]
    return "\n".join(lines)


def _changes_lines(r: Report) -> list[str]:
    """What would put each other plan first (issue 29: every plan has its line; #1's is among its reasons)."""
    lines = []
    for p in r.plans[1:]:
        line = next((x for x in p.reasons if x.startswith("would change: ")), None)
        if line is not None:
            lines.append(_wrap(f"#{p.rank} {p.gpu} x{p.count}: {line.removeprefix('would change: ')}"))
    return ["", "What would put another plan first:", *lines] if lines else []


def _plans_lines(r: Report) -> list[str]:
    """The plans table, where its figures come from, and the chosen plan's reasons, advice, costs of owning,
    operations and launch command."""
    lines = [_plans_table(r)]
    if r.constraints.deployment == "on-prem":
        lines.append(f"costs: TCO of owned GPUs per used GPU-hour; efficiency: {r.efficiency_source}")
    else:
        lines.append(f"{r.prices_line()}; efficiency: {r.efficiency_source}")
    lines.append(f"{r.plans_considered} plans fit; * = on the cost-vs-time front")
    best = r.plans[0]
    lines += ["", f"Why #1 ({best.gpu} x{best.count}):"] + [f"  - {x}" for x in best.reasons]
    lines += ["  " + x for x in configuration_lines(best.configuration, best.alternatives)]
    lines += _changes_lines(r)
    advice = list(best.advice) + [a.message for a in r.job_advice if a.kind == "advice"]
    if advice:
        lines += ["", "Advice:"] + [_wrap(a) for a in advice]
    if r.tco is not None:
        t = r.tco
        lines += [
            "",
            f"Owning {t.inputs.count} x {best.gpu}: ${t.total_usd:,.0f} over {t.inputs.years:g} years, "
            f"${t.usd_per_gpu_hour:.2f} per used GPU-hour; {t.buy_rent.verdict}",
            f"  (full breakdown: gpu-advisor tco --gpu {best.gpu} --count {best.count})",
        ]
    if r.operations is not None:
        lines += ["", "Operations:", *_operations_lines(r.operations)]
    if r.launch is not None:
        lines += [
            "",
            "Launch:",
            "  " + (r.launch.serve or r.launch.torchrun),
            "  (every artefact: --artefacts DIR, or --format toml)",
        ]
    return lines


def _plans_table(r: Report) -> str:
    """One row per plan: GPU, count, layout, memory, time (or serving latency), cost, where, front."""
    inference = r.job.kind == "inference"
    rows = []
    for p in r.plans:
        if inference and p.serving:
            timing = f"{p.serving.ttft_ms.p50:,.0f} / {p.serving.tpot_ms.p50:.0f} ms"
        else:
            timing = f"{fmt_hours(p.hours.p50)} ({fmt_hours(p.hours.p10)}-{fmt_hours(p.hours.p90)})"
        cost = f"${p.cost_usd.low:,.0f}-{p.cost_usd.high:,.0f}"
        where = f"{p.price.provider} {p.price.pricing}" if p.price else "on-prem"
        rows.append(
            [
                p.rank,
                p.gpu,
                p.count,
                p.nodes,
                p.parallelism,
                p.precision,
                f"{p.memory_per_gpu_gb:.0f}/{p.memory.capacity_gb:.0f}",
                timing,
                cost,
                where,
                "*" if p.on_front else "",
            ]
        )
    time_head = "TTFT / per token" if inference else "time P50 (P10-P90)"
    cost_head = "cost per month" if inference else "cost"
    heads = [
        "#",
        "gpu",
        "n",
        "nodes",
        "parallelism",
        "prec",
        "GB/GPU",
        time_head,
        cost_head,
        "where",
        "front",
    ]
    return table(heads, rows, right=(0, 2, 3))


def _operations_lines(ops: OpsPlan) -> list[str]:
    """The operations plan's scaling and fault-tolerance settings, the training cap and its power effect."""
    lines = []
    for section, item in ops.items():
        if section in ("scaling", "fault_tolerance") or item.name == "training cap":
            lines.append(_wrap(f"{item.name}: {item.setting} ({item.reason})"))
    if ops.power_effect is not None:
        e = ops.power_effect
        lines.append(
            _wrap(
                f"a {e.cap_w:.0f} W cap: {e.energy_kwh:,.0f} -> {e.energy_kwh_capped:,.0f} kWh, "
                f"{fmt_hours(e.hours_p50)} -> {fmt_hours(e.hours_p50_capped)}"
            )
        )
    return lines


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=100, initial_indent="  - ", subsequent_indent="    ")


def checklist_text(entries: Sequence[ChecklistEntry], k: Knowledge, *, full: bool) -> str:
    """Checklist entries: an index when listing all, every step when one is asked for."""
    if not entries:
        return "No error type matches."
    if not full:
        rows = [[e.id, e.category, e.title] for e in entries]
        return (
            table(["id", "category", "title"], rows)
            + "\n\nShow one: gpu-advisor checklist ID; search: --search TEXT"
        )
    out = []
    for e in entries:
        out += [f"{e.title}  [{e.id}, {e.category}]", "Symptoms:"] + [_wrap(s) for s in e.symptoms]
        if e.thresholds:
            out.append("Thresholds:")
            out += [
                _wrap(f"{t.metric} {t.op} {t.value:g} {t.unit}: {t.meaning} [{t.source}]")
                for t in e.thresholds
            ]
        out.append("Steps:")
        for i, s in enumerate(e.steps, 1):
            out.append(textwrap.fill(s.text, width=100, initial_indent=f"  {i}. ", subsequent_indent="     "))
            if s.command:
                out.append(f"       $ {s.command}")
        if e.remedies:
            out.append("What shrinks each memory component:")
            out += [_wrap(f"{c}: {'; '.join(r)}") for c, r in e.remedies.items()]
        out.append("Tools: " + ", ".join(e.tools))
        cites = []
        for key in e.sources:
            src = k.source(key)
            cites.append(f"{key} ({src.url or src.ref})" if src else key)
        out += ["Sources: " + "; ".join(cites), ""]
    return "\n".join(out).rstrip()


def tco_text(result: TcoOut) -> str:
    """TCO as text (advisor.cli.tco_text, imported only by the tco command)."""
    from advisor.cli.tco_text import tco_text as render_tco

    return render_tco(result)
