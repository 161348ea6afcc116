"""Provides predict(): throughput with its interval, memory and step time of a workload on one GPU x count."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from advisor.answer.configuration import (
    alternative_out,
    configuration,
    goodput_out,
    layout_out,
    memory_out,
    serving_configuration,
)
from advisor.answer.plan_out import AlternativeOut, ConfigValue, GoodputOut, LayoutOut, MemoryOut, Throughput
from advisor.answer.step_out import StepBreakdown, step_breakdown
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.rules import Firing, evaluate
from advisor.job.config_check import check_config
from advisor.job.inputs import MAX_COUNT, Constraints, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import Job, leaner_recipe, memory_floor_job, resolve_job
from advisor.learned.efficiency import EfficiencyModel, Interval, PriorEfficiency
from advisor.physics.goodput import goodput
from advisor.physics.memory import Memory, inference_memory
from advisor.physics.speed import peak_flops
from advisor.question.assumed import Assumed
from advisor.question.errors import InputError
from advisor.search.candidates import Candidate, efficiency_query, resolve_precision
from advisor.search.context import Context
from advisor.search.training import TrainingSearch, _CountResult, layout_margin, preferred, with_simplest

if TYPE_CHECKING:  # serving modules are imported where a serving answer is made, not by training ones
    from advisor.answer.serving_out import LoadOut
    from advisor.search.serving import Served


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class Prediction:
    """What one GPU type and count achieves on one workload."""

    model: str
    workload: str
    gpu: str
    count: int
    nodes: int
    precision: str
    parallelism: str
    layout: LayoutOut
    throughput: Throughput | None
    """None when nothing fits."""
    memory: MemoryOut
    step_time_s: Interval | None = None
    efficiency: Interval | None = None
    efficiency_source: str
    bound: str | None = None
    speed_of_light: float | None = None
    """Throughput at 100% efficiency, same unit."""
    serving_ttft_ms: Interval | None = None
    serving_tpot_ms: Interval | None = None
    serving_load: LoadOut | None = None
    """Serving under the stated load: running and waiting requests, TTFT/TPOT/ITL percentiles."""
    assumed: tuple[Assumed, ...] = ()
    notes: tuple[str, ...] = ()
    configuration: dict[str, ConfigValue] = field(default_factory=dict)
    alternatives: tuple[AlternativeOut, ...] = ()
    goodput: GoodputOut | None = None
    refusal: str | None = None
    """Why nothing runs: memory, scale (the global batch), constraint or latency; None when it runs."""
    step_breakdown: StepBreakdown | None = None
    """The P50 training step by operation class (an LLM: composed from measured operations)."""


def _node_size(gpu: Gpu, count: int) -> int:
    if count < 1 or count > MAX_COUNT:
        raise InputError(
            field="count", value=count, problem="is past the search's limit", accepted=f"1 to {MAX_COUNT:,}"
        )
    if count > gpu.gpus_per_node and count % gpu.gpus_per_node:
        raise InputError(
            field="count",
            value=count,
            problem=f"is past one server, and {gpu.id} comes in whole servers of {gpu.gpus_per_node} GPUs",
            accepted=f"up to {gpu.gpus_per_node}, or a multiple of it",
        )
    return min(count, gpu.gpus_per_node)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _Where:
    """What every answer of one predict call shares: the catalogue, the GPU x count and its servers, the
    constraints and the efficiency model (the retries and spans answer other jobs on the same)."""

    knowledge: Knowledge
    gpu: Gpu
    count: int
    node_size: int
    constraints: Constraints
    model: EfficiencyModel

    def context(self, job: Job) -> Context:
        return Context(self.knowledge, job, self.constraints, self.model)


def _check_precision(ctx: Context, gpu: Gpu, precision: str, node_size: int) -> None:
    facts = {**ctx.gpu_facts(gpu, node_size), "plan.precision": precision}
    hard = [
        f
        for f in evaluate(ctx.rules_by_scope["gpu"] + ctx.rules_by_scope["plan"], facts)
        if f.kind == "constraint"
    ]
    if hard:
        raise InputError(
            field="precision",
            value=precision,
            problem=f"is refused: {hard[0].message} (rule {hard[0].rule_id})",
            accepted="on this GPU: fp16"
            + (", bf16" if gpu.features.bf16 else "")
            + (", fp8" if gpu.features.fp8 else ""),
        )
    if peak_flops(gpu, precision) is None:
        raise InputError(
            field="precision",
            value=precision,
            problem=f"is not on {gpu.id}: it has no {precision} peak "
            f"({gpu.missing.get('tflops.' + precision, 'unsupported')})",
            accepted="a precision the GPU has",
        )


def predict(
    knowledge: Knowledge,
    workload: Workload,
    gpu_name: str,
    count: int,
    constraints: Constraints | None = None,
    efficiency: EfficiencyModel | None = None,
) -> Prediction:
    """Predict one GPU x count: the stated configuration exactly, the rest chosen as the fastest that fits."""
    constraints = constraints or Constraints()
    gpu = knowledge.gpu(gpu_name)
    node_size = _node_size(gpu, count)
    job = resolve_job(knowledge, workload, need_data=False)
    check_config(job, count)
    model = efficiency or PriorEfficiency(knowledge.assumptions)
    where = _Where(knowledge, gpu, count, node_size, constraints, model)
    found = _answer(where, job)
    if found.refusal == "memory":
        lean = leaner_recipe(knowledge, workload, job, count)
        retry = _answer(where, lean) if lean else None
        found = retry if retry is not None and retry.refusal is None else found
    if found.refusal == "memory":
        found = _at_memory_floor(where, workload, job, found)
    found = _with_open_recompute(where, workload, job, found)
    found = _with_open_stack(where, workload, found)
    return _with_drift(knowledge, found, job, gpu)


def _at_memory_floor(where: _Where, workload: Workload, job: Job, refused: Prediction) -> Prediction:
    """A training refusal for memory whose stack the user did not name, retried with the memory counted at the
    leanest runtime the catalogue sources (resolve.memory_floor_job): where that fits, answered at the assumed
    stack's speed with the verdict 'may not fit' and what the assumed stack needs, not refused; the refusal
    stands where even the floor does not fit, or the stack was stated."""
    floor = memory_floor_job(workload, job)
    if floor is None:
        return refused
    found = _answer(where, floor)
    mem = found.memory
    if found.refusal is not None or mem.per_gpu_gb > mem.usable_gb:
        return refused  # the floor is already lean: no measured band on top of it
    note = (
        f"may not fit: the stack was not stated, and on the assumed {job.stack} the leanest layout needs "
        f"{refused.memory.per_gpu_gb:.1f} GB per GPU of {mem.usable_gb:.1f} usable; this plan fits "
        f"({mem.per_gpu_gb:.1f} GB) only on a runtime as lean as the leanest the catalogue sources (fused "
        "blocks, a chunked cross-entropy, 16-bit gradients, no allocator reserve); state --stack to be "
        "held to one"
    )
    shown = dataclasses.replace(mem, fits=False, verdict="may not fit")
    return dataclasses.replace(found, memory=shown, notes=(note, *found.notes))


def _with_open_recompute(where: _Where, workload: Workload, job: Job, found: Prediction) -> Prediction:
    """A training answer whose recipe the user left open, at a model size where the assumed stack's public
    runs split between no and full recomputation (job/data.py open_recompute): its P50 midway between the plan
    and the same stack's answer with full recomputation, the interval spanning both, the answer saying so."""
    from advisor.catalog.stacks import stack_of
    from advisor.job.data import open_recompute

    stack, chosen = found.configuration.get("stack"), found.configuration.get("recompute")
    if found.throughput is None or stack is None or chosen is None:
        return found
    assumed = stack_of(where.knowledge, str(stack.value))
    other = open_recompute(workload, assumed, job.params, str(chosen.value))
    if other is None:
        return found
    from advisor.answer.stack_span import between, open_recompute_note
    from advisor.question.errors import AdvisorError

    stated = dataclasses.replace(workload, config=dataclasses.replace(workload.config, recompute=other))
    try:
        alt_job = resolve_job(where.knowledge, stated, need_data=False)
        alt = _best_plan(where, alt_job)
    except AdvisorError:
        return found
    if alt is None:
        return found
    tput, step, eff = between(found.throughput, alt[0], found.step_time_s, found.efficiency)
    note = open_recompute_note(found.throughput, alt[0], job.params)
    marked = dataclasses.replace(chosen, note=f"open: {other} also priced")
    return dataclasses.replace(
        found,
        throughput=tput,
        step_time_s=step,
        efficiency=eff,
        notes=(*found.notes, note),
        configuration={**found.configuration, "recompute": marked},
    )


def _with_open_stack(where: _Where, workload: Workload, found: Prediction) -> Prediction:
    """A training answer whose stack the user did not state, spanning the best-case stack's answer on the
    same GPU x count (stack_span.span); unchanged when that stack cannot run it or nothing was answered."""
    from advisor.job.data import open_stack

    assumed = found.configuration.get("stack")
    if found.throughput is None or assumed is None:
        return found
    other = open_stack(workload.config.stack, found.workload, str(assumed.value))
    if other is None:
        return found
    from advisor.answer.stack_span import open_stack_note, span
    from advisor.question.errors import AdvisorError

    stated = dataclasses.replace(workload, config=dataclasses.replace(workload.config, stack=other))
    try:
        job = resolve_job(where.knowledge, stated, need_data=False)
        check_config(job, where.count)
        alt = _best_plan(where, job)
    except AdvisorError:
        return found  # the best-case stack cannot run what was asked (a layout, an adapter, a precision)
    if alt is None:
        return found  # it does not fit: nothing to span
    theirs, layout = alt
    tput, step, eff = span(found.throughput, theirs, found.step_time_s, found.efficiency)
    note = open_stack_note(str(assumed.value), other, layout, found.throughput, theirs, where.count)
    return dataclasses.replace(
        found, throughput=tput, step_time_s=step, efficiency=eff, notes=(*found.notes, note)
    )


def _best_plan(where: _Where, job: Job) -> tuple[float, str] | None:
    """The P50 throughput and layout a training answer on the GPU x count would give (_answer's, without the
    rest of the answer: what the open stack's span reads), or None where nothing runs."""
    ctx, gpu = where.context(job), where.gpu
    precision = resolve_precision(job.precision, gpu)
    _check_precision(ctx, gpu, precision, where.node_size)
    search = TrainingSearch(ctx, gpu, precision, where.node_size)
    ranked = _ranked_plans(ctx, search, search.search_count(where.count), where.model)
    if ranked is None:
        return None
    cand, eff = ranked[0][0]
    return eff.scaled(cand.sol_items_per_s).p50, cand.layout.label()


def _answer(where: _Where, job: Job) -> Prediction:
    """The prediction of one resolved job on the GPU x count."""
    gpu, count, node_size, model = where.gpu, where.count, where.node_size, where.model
    ctx = where.context(job)
    precision = resolve_precision(job.precision, gpu)
    _check_precision(ctx, gpu, precision, node_size)
    # A prediction of one GPU x count uses no load and, unless given, no latency target: drop those defaults.
    assumed = tuple(a for a in job.assumed if a.field not in ("requests_per_s", "tpot_ms", "slo_percentile"))
    stack_note = getattr(model, "stack_note", None)  # the learned model says what the stack changes
    if job.training:
        source = model.name + (stack_note(job.stack) if stack_note else "")
    else:
        from advisor.answer.serving_answer import serving_source_name

        source = serving_source_name()
    common = dict(
        model=job.model_id,
        workload=job.kind,
        gpu=gpu.id,
        count=count,
        precision=precision,
        efficiency_source=source,
        assumed=assumed,
    )
    if job.training:
        return _predict_training(ctx, gpu, precision, count, node_size, model, common)
    return _predict_serving(ctx, gpu, precision, count, node_size, common)


def _with_drift(knowledge: Knowledge, found: Prediction, job: Job, gpu: Gpu) -> Prediction:
    """The prediction with the drift warning (advisor/answer/drift.py) when the user names a version."""
    if not job.stack_version:
        return found
    from advisor.answer.drift import drift_notes

    key = job.stack if job.training else (job.config.engine or "vllm")
    notes = drift_notes(knowledge, job, gpu.id, key)
    return dataclasses.replace(found, notes=(*found.notes, *notes)) if notes else found


def _predict_training(
    ctx: Context, gpu: Gpu, precision: str, count: int, node_size: int, model: EfficiencyModel, common: dict
) -> Prediction:
    search = TrainingSearch(ctx, gpu, precision, node_size)
    res = search.search_count(count)
    ranked = _ranked_plans(ctx, search, res, model)
    if ranked is None:
        return _refusal(ctx, search, res, count, common)
    timed, notes = ranked
    cand, eff = timed[0]
    assert cand.step is not None
    tput = eff.scaled(cand.sol_items_per_s)
    step = eff.inverted(cand.step.total_s)
    # The efficiency shown is against the speed of light (peak compute, datasheet links), whatever the
    # step was composed from: the composed step's own share of it scales the learned residual.
    sol = cand.step.items / cand.step.sol_s
    shown = eff.scaled(cand.step.sol_s / cand.step.total_s)
    ops = cand.step.ops
    breakdown = step_breakdown(ops, step.p50, common["efficiency_source"]) if ops is not None else None
    good = goodput(ctx.job, count, ctx.knowledge.assumptions)
    return Prediction(
        **common,
        nodes=cand.layout.nodes,
        parallelism=cand.layout.label(),
        layout=layout_out(cand.layout),
        throughput=Throughput(value=tput.p50, p10=tput.p10, p90=tput.p90, unit=ctx.job.unit),
        memory=memory_out(cand.memory),
        step_time_s=step,
        efficiency=shown,
        bound=cand.step.bound,
        speed_of_light=sol,
        step_breakdown=breakdown,
        configuration=configuration(ctx.job, cand.layout),
        alternatives=tuple(alternative_out(c, e, step.p50, cand.step.items) for c, e in timed[1:]),
        goodput=goodput_out(good),
        notes=notes + ((eff.note,) if eff.note else ()) + _warnings(cand.firings),
    )


def _ranked_plans(
    ctx: Context, search: TrainingSearch, res: _CountResult, model: EfficiencyModel
) -> tuple[list[tuple[Candidate, Interval]], tuple[str, ...]] | None:
    """The count's kept layouts with their learned efficiency, the one answered first (the fastest unless a
    simpler one is within the model's margin), and the notes that choice earns; None where nothing runs."""
    found = with_simplest(res)
    notes: tuple[str, ...] = ()
    if not found:
        near = search.near_limit(res)
        if near is None:
            return None
        # Within the memory model's measured error of fitting: answered, and said, rather than refused.
        found, notes = [near], (_near_limit_note(search.candidate(near).memory),)
    cands = [search.candidate(f) for f in found]
    effs = model.estimate([efficiency_query(c, ctx) for c in cands])
    timed = sorted(zip(cands, effs, strict=True), key=lambda ce: ce[0].predicted_s(ce[1].p50))
    timed.insert(0, timed.pop(preferred(timed, layout_margin(model))))
    return timed, notes


def _warnings(firings: list[Firing]) -> tuple[str, ...]:
    """The warnings a stated plan earns (rules named warn-*: a layout answered though the search would never
    choose it), said beside the figure."""
    return tuple(f"warning: {f.message}" for f in firings if f.rule_id.startswith("warn-"))


def _near_limit_note(memory: Memory) -> str:
    return (
        f"may not fit: {memory.central_gb:.1f} GB per GPU on the central estimate against "
        f"{memory.usable_gb:.1f} usable, within the error measured on published peaks (their P25-P75), so "
        "the chance of running out is between a quarter and three quarters: answered for the leanest layout "
        "holding the given values"
    )


def _refusal(ctx: Context, search: TrainingSearch, res: _CountResult, count: int, common: dict) -> Prediction:
    """Nothing runs: the real reason, and the memory of the stated (or leanest) configuration."""
    miss = search.miss(count, res)
    lean = search.leanest_memory(res)
    kind = miss.kind if miss else "memory"
    if lean is None:  # refused before memory was looked at (the global batch): show data parallel, as stated
        layout = Layout(
            count=count,
            nodes=max(1, math.ceil(count / search.node_size)),
            node_size=search.node_size,
            precision=search.precision,
            dp=count,
            sharding="ddp" if count > 1 else "none",
            micro_batch=ctx.job.batch_size or 1,
            grad_accum=max(1, math.ceil(search.global_batch(count) / ((ctx.job.batch_size or 1) * count))),
        )
        mem = search.model.components(layout, search.usable)
    else:
        layout, mem = lean
    given = ctx.job.config.given()
    what = (
        "the configuration as given"
        if _fully_given(ctx)
        else ("the leanest layout holding the given values" if given else "the leanest layout")
    )
    note = miss.message if miss else "no layout fits"
    if kind == "memory":
        note = f"does not fit: {mem.central_gb:.1f} GB per GPU needed for {what}, {mem.usable_gb:.1f} usable"
    return Prediction(
        **common,
        nodes=layout.nodes,
        parallelism=layout.label(),
        layout=layout_out(layout),
        throughput=None,
        memory=memory_out(mem),
        notes=(note,),
        refusal=kind,
        configuration=configuration(ctx.job, layout),
    )


def _fully_given(ctx: Context) -> bool:
    c = ctx.job.config
    return all(v is not None for v in (c.tp, c.pp, c.zero, c.recompute)) and ctx.job.batch_size is not None


def _predict_serving(
    ctx: Context, gpu: Gpu, precision: str, count: int, node_size: int, common: dict
) -> Prediction:
    """The same serving search as recommend, with the GPU, the count and every stated value held."""
    from advisor.answer.serving_answer import load_out, serving_interval
    from advisor.search.serving import search_serving, shapes

    job = ctx.job
    if job.config.tp and job.config.tp > node_size and job.config.tp % node_size:
        raise InputError(
            field="tp",
            value=job.config.tp,
            problem=f"is wider than {gpu.id}'s {node_size}-GPU servers and not a whole number of them",
            accepted=f"tensor parallel within a server (up to {node_size} on {gpu.id}) or over whole servers "
            f"(a multiple of {node_size})",
        )
    found, missed = search_serving(ctx, gpu, precision, node_size, count)
    if not found:
        if not shapes(job, node_size, count):
            raise InputError(
                field="tp",
                value=job.config.tp or 1,
                problem=f"x pp {job.config.pp or 1} does not divide the {count} GPUs",
                accepted=f"tp x pp dividing {count}",
            )
        return _serving_refusal(ctx, gpu, precision, count, node_size, common, missed)
    best = max(found, key=lambda c: (c.serving.throughput if c.serving else 0.0, -c.layout.tp))
    served = best.serving
    assert served is not None
    fig = served.figures
    load = load_out(ctx, served)
    tput = serving_interval(served, "throughput", served.throughput)
    ttft_s, tpot_s = served.ttft_s, served.tpot_s
    if served.stats is not None:  # the simulated load, at the SLO percentile
        at = {50: 0, 90: 1, 99: 2}.get(job.slo_percentile, 0)
        ttft_s, tpot_s = served.stats.ttft[at], served.stats.tpot[at]
    ttft = serving_interval(served, "ttft", ttft_s * 1000.0)
    tpot = serving_interval(served, "tpot", tpot_s * 1000.0)
    share = serving_interval(served, "throughput", fig.sat.output_tok_s / fig.sol.output_tok_s)
    before = (tput, ttft, tpot)
    tput, ttft, tpot, calibrated = _serving_calibration(ctx, gpu, best.layout, tput, ttft, tpot)
    load = _calibrated_load(load, calibrated, (tput, ttft, tpot), before)
    notes = _serving_notes(ctx, served, (ttft.p50, tpot.p50)) + calibrated
    return Prediction(
        **common,
        nodes=best.layout.nodes,
        parallelism=best.layout.serving_label(),
        layout=layout_out(best.layout),
        throughput=Throughput(value=tput.p50, p10=tput.p10, p90=tput.p90, unit="output tokens/s"),
        memory=memory_out(best.memory),
        configuration=serving_configuration(job, best.layout),
        step_time_s=tpot.scaled(1e-3),
        efficiency=Interval(min(1.0, share.p10), min(1.0, share.p50), min(1.0, share.p90)),
        bound=fig.bound,
        speed_of_light=fig.sol.output_tok_s * served.replicas,
        serving_ttft_ms=ttft,
        serving_tpot_ms=tpot,
        serving_load=load,
        notes=notes,
    )


def _calibrated_load(
    load: LoadOut | None,
    calibrated: tuple[str, ...],
    moved: tuple[Interval, ...],
    before: tuple[Interval, ...],
) -> LoadOut | None:
    """The stated load's line moved by the factors a calibration moved the plan's figures by (throughput,
    first token, per token: their P50s after / before), so that the load line says what they say."""
    if load is None or not calibrated:
        return load
    from advisor.answer.serving_out import moved_load

    factors = [m.p50 / b.p50 if b.p50 else 1.0 for m, b in zip(moved, before, strict=True)]
    return moved_load(load, *factors)


def _serving_calibration(
    ctx: Context, gpu: Gpu, layout: Layout, tput: Interval, ttft: Interval, tpot: Interval
) -> tuple[Interval, Interval, Interval, tuple[str, ...]]:
    """The serving figures moved by the user's results on this GPU and engine (advisor/answer/
    calibration_answer.py), and the notes naming the profile."""
    from advisor.answer.calibration_answer import serving_calibrated

    moved, notes = serving_calibrated(
        ctx, gpu, layout, {"output_tok_s": tput, "ttft_ms": ttft, "tpot_ms": tpot}
    )
    return moved["output_tok_s"], moved["ttft_ms"], moved["tpot_ms"], notes


def _serving_refusal(
    ctx: Context, gpu: Gpu, precision: str, count: int, node_size: int, common: dict, missed: list
) -> Prediction:
    """Nothing serves as stated: the memory of the leanest stated layout, and the reason."""
    from advisor.search.serving import engine_usable_gb, shapes

    job, a = ctx.job, ctx.knowledge.assumptions
    tp, pp = max(shapes(job, node_size, count))
    layout = Layout(
        count=count,
        nodes=math.ceil(count / node_size),
        node_size=node_size,
        precision=precision,
        tp=tp,
        pp=pp,
        dp=count // (tp * pp),
    )
    usable, _ = engine_usable_gb(ctx, gpu)
    mem = inference_memory(job, gpu, layout, a, usable, job.prompt_tokens + job.output_tokens)
    miss = missed[0] if missed else None
    kind = miss.kind if miss else "memory"
    note = miss.message if miss else "not one sequence fits in memory"
    return Prediction(
        **common,
        nodes=layout.nodes,
        parallelism=layout.serving_label(),
        layout=layout_out(layout),
        throughput=None,
        memory=memory_out(mem),
        refusal=kind,
        configuration=serving_configuration(job, layout),
        notes=(note,),
    )


def _serving_notes(ctx: Context, served: Served, shown: tuple[float, float]) -> tuple[str, ...]:
    """The engine and its data, what the figures are (at a load, a stated batch, or full), and the max;
    `shown`: the TTFT and TPOT (ms) the answer shows, said against the targets."""
    from advisor.answer.serving_answer import serving_notes

    job = ctx.job
    fig = served.figures
    q = job.slo_percentile
    lines = list(serving_notes(ctx, served, shown))
    full = fig.sat.output_tok_s
    lines.append(
        f"learned max throughput {full / fig.replica_gpus:,.0f} output tokens/s per GPU "
        f"({full * served.replicas:,.0f} for the {served.replicas} replica(s); capacity "
        f"{fig.sat.requests_s * served.replicas:.2f} req/s at {fig.sat.batch:.0f} running sequences per "
        "replica)"
    )
    if job.batch_size:
        lines.append(
            f"at a static batch of {job.batch_size} requests in flight per replica (closed loop): P{q} TTFT "
            "and TPOT shown"
        )
    elif job.concurrency:
        n = job.num_prompts
        run = f"; a run of {n} requests, each counted, not the steady state" if n else ""
        lines.append(
            f"at {job.concurrency} requests in flight (closed loop, {served.batch} per replica{run}): "
            f"P{q} TTFT and TPOT shown"
        )
    elif job.num_prompts and 0 < job.requests_per_s < math.inf:
        lines.append(
            f"a run of {job.num_prompts} prompts at {job.requests_per_s:g} req/s: P{q} TTFT and TPOT "
            "over them"
        )
    elif job.num_prompts:
        lines.append(f"a burst of {job.num_prompts} prompts sent at once: P{q} TTFT and TPOT over them")
    elif served.load is not None:
        lines.append(f"at {served.rate * served.replicas:g} req/s: P{q} TTFT and TPOT shown")
    elif served.rate <= 0:  # (a rate over capacity says so in its own note)
        lines.append(
            "no load given: throughput is the replica kept full; first token of a lone request on an idle "
            "replica, per-token time while full (pass a request rate or a batch for latency under load)"
        )
    if served.targets.ttft_s is not None or served.targets.tpot_s is not None:
        lines.append(
            f"largest request rate meeting the latency targets at P{q}: "
            f"{served.max_rate * served.replicas:.2f} req/s"
        )
    return tuple(lines + served.notes)
