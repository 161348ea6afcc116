"""Provides predict(): throughput with its interval, memory and step time of a workload on one GPU x count."""

from __future__ import annotations

import math

from pydantic import Field

from advisor.answer.configuration import (
    configuration,
    goodput_out,
    layout_out,
    memory_out,
    serving_configuration,
)
from advisor.answer.report import (
    AlternativeOut,
    ConfigValue,
    GoodputOut,
    LayoutOut,
    MemoryOut,
    Range3,
    Throughput,
)
from advisor.catalog.common import Strict
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.rules import evaluate
from advisor.job.config_check import check_config
from advisor.job.inputs import MAX_COUNT, Constraints, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.learned.efficiency import EfficiencyModel, Interval, PriorEfficiency, Query
from advisor.learned.serving.model import load_model
from advisor.physics.goodput import goodput
from advisor.physics.memory import GB, inference_memory, inference_terms, serving_usable_gb
from advisor.physics.speed import peak_flops
from advisor.question.assumed import Assumed
from advisor.question.errors import InputError
from advisor.search.candidates import Candidate, efficiency_query, largest_batch_within, resolve_precision
from advisor.search.context import Context
from advisor.search.serving import Learned, describe_load, engine_of, learned_efficiency, load_figures
from advisor.search.training import TrainingSearch, _CountResult


class Prediction(Strict):
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
    step_time_s: Range3 | None = None
    efficiency: Range3 | None = None
    efficiency_source: str
    bound: str | None = None
    speed_of_light: float | None = None
    """Throughput at 100% efficiency, same unit."""
    serving_ttft_ms: Range3 | None = None
    serving_tpot_ms: Range3 | None = None
    assumed: tuple[Assumed, ...] = ()
    notes: tuple[str, ...] = Field(default=())
    configuration: dict[str, ConfigValue] = {}
    alternatives: tuple[AlternativeOut, ...] = ()
    goodput: GoodputOut | None = None
    refusal: str | None = None
    """Why nothing runs: memory, scale (the global batch), constraint or latency; None when it runs."""


def _r3(x: Interval) -> Range3:
    return Range3(p10=x.p10, p50=x.p50, p90=x.p90)


def _node_size(gpu: Gpu, count: int) -> int:
    if count < 1 or count > MAX_COUNT:
        raise InputError(f"--count {count}: must be between 1 and {MAX_COUNT:,}")
    if count > gpu.gpus_per_node and count % gpu.gpus_per_node:
        raise InputError(
            f"--count {count}: past one server, {gpu.id} comes in whole servers of {gpu.gpus_per_node} GPUs"
        )
    return min(count, gpu.gpus_per_node)


def _check_precision(ctx: Context, gpu: Gpu, precision: str, node_size: int) -> None:
    facts = {**ctx.gpu_facts(gpu, node_size), "plan.precision": precision}
    hard = [
        f
        for f in evaluate(ctx.rules_by_scope["gpu"] + ctx.rules_by_scope["plan"], facts)
        if f.kind == "constraint"
    ]
    if hard:
        raise InputError(
            f"{hard[0].message} (rule {hard[0].rule_id}); accepted precisions here: fp16"
            + (", bf16" if gpu.features.bf16 else "")
            + (", fp8" if gpu.features.fp8 else "")
        )
    if peak_flops(gpu, precision) is None:
        raise InputError(
            f"--precision {precision}: {gpu.id} has no {precision} peak "
            f"({gpu.missing.get('tflops.' + precision, 'unsupported')})"
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
    ctx = Context(knowledge, job, constraints, model)
    precision = resolve_precision(job.precision, gpu)
    _check_precision(ctx, gpu, precision, node_size)
    # A prediction of one GPU x count uses no load and, unless given, no latency target: drop those defaults.
    assumed = tuple(a for a in job.assumed if a.field not in ("requests_per_s", "tpot_ms"))
    stack_note = getattr(model, "stack_note", None)  # the learned model says what the stack changes
    source = (
        (model.name + (stack_note(job.stack) if stack_note else ""))
        if job.training
        else (
            "learned from measured serving runs (knowledge/serving_model.json)"
            if load_model() and job.arch
            else "priors for serving (decode bandwidth, prefill compute)"
        )
    )
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
    usable = serving_usable_gb(gpu, ctx.knowledge.assumptions, ctx.headroom)
    # A prediction holds serving to a latency target only when the user sets one.
    target = workload.tpot_ms if workload.tpot_ms is not None else float("inf")
    return _predict_serving(ctx, gpu, precision, count, node_size, usable, model, common, target)


def _predict_training(
    ctx: Context, gpu: Gpu, precision: str, count: int, node_size: int, model: EfficiencyModel, common: dict
) -> Prediction:
    search = TrainingSearch(ctx, gpu, precision, node_size)
    res = search.search_count(count)
    if not res.found:
        return _refusal(ctx, search, res, count, common)
    cands = [search.candidate(f) for f in sorted(res.found)]
    effs = model.estimate([efficiency_query(c, ctx) for c in cands])
    timed = sorted(zip(cands, effs, strict=True), key=lambda ce: ce[0].predicted_s(ce[1].p50))
    cand, eff = timed[0]
    assert cand.step is not None
    sol = cand.sol_items_per_s
    tput = eff.scaled(sol)
    step = eff.inverted(cand.step.total_s)
    good = goodput(ctx.job, count, ctx.knowledge.assumptions)
    return Prediction(
        **common,
        nodes=cand.layout.nodes,
        parallelism=cand.layout.label(),
        layout=layout_out(cand.layout),
        throughput=Throughput(value=tput.p50, p10=tput.p10, p90=tput.p90, unit=ctx.job.unit),
        memory=memory_out(cand.memory),
        step_time_s=_r3(step),
        efficiency=_r3(eff),
        bound=cand.step.bound,
        speed_of_light=sol,
        configuration=configuration(ctx.job, cand.layout),
        alternatives=tuple(alternative_out(c, e, step.p50) for c, e in timed[1:]),
        goodput=goodput_out(good),
    )


def alternative_out(cand: Candidate, eff: Interval, chosen_step_s: float) -> AlternativeOut:
    """A runner-up layout with its P50 step time against the chosen one's."""
    assert cand.step is not None
    t = cand.step.total_s / eff.p50
    return AlternativeOut(
        parallelism=cand.layout.label(),
        layout=layout_out(cand.layout),
        memory_per_gpu_gb=round(cand.memory.central_gb, 2),
        step_time_s=t,
        slower=round(t / chosen_step_s, 3) if chosen_step_s else 1.0,
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
    ctx: Context,
    gpu: Gpu,
    precision: str,
    count: int,
    node_size: int,
    usable: float,
    model: EfficiencyModel,
    common: dict,
    tpot_target_ms: float,
) -> Prediction:
    a, job = ctx.knowledge.assumptions, ctx.job
    context = job.prompt_tokens + job.output_tokens
    probe = Layout(count=1, nodes=1, node_size=node_size, precision=precision)
    decode, prefill = model.estimate([Query("decode", job, gpu, probe), Query("prefill", job, gpu, probe)])
    best = None
    leanest = None
    given_tp, pp = job.config.tp, job.config.pp or 1
    for tp in (given_tp,) if given_tp else (1, 2, 4, 8, 16):
        if (
            (not given_tp and tp > min(count, node_size))
            or count % (tp * pp)
            or (job.arch and job.arch.heads % tp)
        ):
            continue
        layout = Layout(
            count=count,
            nodes=math.ceil(count / node_size),
            node_size=node_size,
            precision=precision,
            tp=tp,
            pp=pp,
            dp=count // (tp * pp),
        )
        terms = inference_terms(job, gpu, layout, a, context)
        room = usable * GB - sum(hi for _, _, hi in terms.fixed)
        b_max = int(room // terms.kv_per_seq_high) if terms.kv_per_seq_high > 0 else 0
        mem = inference_memory(job, gpu, layout.with_(micro_batch=max(b_max, 1)), a, usable, context)
        if leanest is None or mem.central_gb < leanest[1].central_gb:
            leanest = (layout, mem)
        if b_max < 1:
            continue
        weights_b = terms.fixed[0][2] / (1 + a.memory.weights_rel_error.value)
        kv_seq = terms.kv_per_seq_high / 1.01
        learned = learned_efficiency(job, precision, tp, engine_of(getattr(ctx, "workload", None) or job)[0])
        dec, pre = (learned.decode, learned.prefill) if learned else (decode, prefill)
        b, t = largest_batch_within(job, gpu, layout, a, b_max, weights_b, kv_seq, dec.p50, tpot_target_ms)
        if t is None:
            continue
        tokens = layout.dp * b / t.decode_step_s
        if best is None or tokens > best[0][0]:
            best = ((tokens, layout.with_(micro_batch=b), t, mem), (dec, pre, learned))
    if best is None:
        if leanest is None:
            raise InputError(f"--tp {given_tp} x --pp {pp} does not divide --count {count}")
        layout, mem = leanest
        latency = tpot_target_ms != float("inf")
        return Prediction(
            **common,
            nodes=layout.nodes,
            parallelism=layout.label(),
            layout=layout_out(layout),
            throughput=None,
            memory=memory_out(mem),
            refusal="latency" if latency else "memory",
            configuration=serving_configuration(job, layout),
            notes=(
                f"nothing meets {tpot_target_ms:g} ms per token with this memory"
                if tpot_target_ms != float("inf")
                else "not one sequence fits in memory",
            ),
        )
    (sol_tokens, layout, t, _), (decode, prefill, learned) = best
    mem = inference_memory(job, gpu, layout, a, usable, context)
    notes = _serving_notes(ctx, gpu, precision, layout, learned)
    tput = decode.scaled(sol_tokens)
    return Prediction(
        **common,
        nodes=layout.nodes,
        parallelism=layout.serving_label(),
        layout=layout_out(layout),
        throughput=Throughput(value=tput.p50, p10=tput.p10, p90=tput.p90, unit="output tokens/s"),
        memory=memory_out(mem),
        configuration=serving_configuration(job, layout),
        step_time_s=_r3(decode.inverted(t.decode_step_s)),
        efficiency=_r3(decode),
        bound=t.decode_bound,
        speed_of_light=sol_tokens,
        serving_ttft_ms=_r3(prefill.inverted(t.prefill_s * 1000)),
        serving_tpot_ms=_r3(decode.inverted(t.decode_step_s * 1000)),
        notes=notes,
    )


def _serving_notes(
    ctx: Context, gpu: Gpu, precision: str, layout: Layout, learned: Learned | None
) -> tuple[str, ...]:
    """Which serving figures are learned (and from what) and which are priors; latency at the user's load."""
    if learned is None:
        return (
            "inference: no learned serving model for this workload; efficiency is a prior "
            "(decode MBU, prefill MFU)",
        )
    engine, given = engine_of(getattr(ctx, "workload", None) or ctx.job)
    notes = [
        learned.note,
        f"engine {engine}" + ("" if given else " (default; no engine given)"),
        "priors still used: memory headroom, KV-cache layout, TP all-reduce cost",
    ]
    # predict answers a load only when given
    defaulted = any(a.field == "requests_per_s" for a in ctx.job.assumed)
    rate = None if defaulted else ctx.job.requests_per_s
    targets = not any(a.field == "tpot_ms" for a in ctx.job.assumed)
    fig = load_figures(ctx.job, gpu, precision, layout.tp, layout.dp, engine, rate, targets)
    return tuple(notes) + (describe_load(fig, rate) if fig else ())
