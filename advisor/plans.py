"""Provides the plan search: for one GPU type, every count and layout that fits, timed at speed of light."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.context import Context
from advisor.efficiency.base import Interval, Query, regime_of
from advisor.job import Job
from advisor.layout import Layout
from advisor.memory import GB, Memory, TrainingMemoryModel, inference_memory, inference_terms
from advisor.rules import Firing, Rule, evaluate
from advisor.serving.advise import engine_of, learned_efficiency, load_figures
from advisor.speed import ServingTime, StepTime, peak_flops, serving_times, training_step

NODE_STEPS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
LLM_TOKENS_PER_MICRO_BATCH = 16384  # MosaicML's tuned runs hold about 8-16k tokens per GPU per micro-batch


@dataclass
class Candidate:
    """A plan that fits: its layout, memory and speed-of-light timing (efficiency and cost come later)."""

    gpu: Gpu
    layout: Layout
    memory: Memory
    regime: str
    step: StepTime | None = None
    serving: ServingTime | None = None
    firings: list[Firing] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def sol_items_per_s(self) -> float:
        """Whole-system throughput at 100% efficiency (training)."""
        assert self.step is not None
        return self.step.items / self.step.total_s


@dataclass(frozen=True, slots=True)
class Miss:
    """A GPU x count that was excluded, and why, for the 'why not' lines."""

    gpu_id: str
    count: int
    kind: str
    """memory | constraint | precision | price | scale | latency | deadline | budget."""
    message: str
    rank: float = 0.0
    """Smaller = nearer to being chosen."""

    def line(self) -> str:
        """'h100-sxm x2: needs 112 GB per GPU, has 80'."""
        return f"{self.gpu_id} x{self.count}: {self.message}"


def counts_for(node_size: int, max_gpus: int) -> list[int]:
    """1, 2, 4, ... up to one server, then whole servers."""
    counts = [c for c in (1, 2, 4, 8, 16) if c <= node_size]
    if node_size not in counts:
        counts.append(node_size)
    counts += [node_size * n for n in NODE_STEPS]
    return [c for c in counts if c <= max_gpus]


def resolve_precision(requested: str, gpu: Gpu) -> str:
    """'auto' becomes the GPU's best 16-bit type: bf16 where supported, else fp16."""
    if requested != "auto":
        return requested
    return "bf16" if gpu.features.bf16 else "fp16"


def _layout_facts(base: dict[str, Any], layout: Layout, gpu: Gpu) -> dict[str, Any]:
    return {
        **base,
        "plan.precision": layout.precision,
        "plan.count": layout.count,
        "plan.nodes": layout.nodes,
        "plan.tp": layout.tp,
        "plan.tp_outside_nvlink": layout.tp > gpu.nvlink_domain,
        "plan.pp": layout.pp,
        "plan.dp": layout.dp,
        "plan.sharding": layout.sharding,
        "plan.recompute": layout.recompute,
        "plan.micro_batch": layout.micro_batch,
    }


def _plan_facts(base: dict[str, Any], layout: Layout, memory: Memory, gpu: Gpu, comm_fraction: float) -> dict[str, Any]:
    return {
        **_layout_facts(base, layout, gpu),
        "plan.memory_fraction": round(memory.high_gb / memory.capacity_gb, 3),
        "plan.dominant": memory.dominant,
        "plan.comm_fraction": round(comm_fraction, 2),
    }


def first_constraint(rules: list[Rule], facts: dict[str, Any]) -> Firing | None:
    """The first hard constraint that holds, rendered; None when the plan is allowed."""
    for rule in rules:
        if rule.test(facts):
            return evaluate([rule], facts)[0]
    return None


def _model_parallel_options(ctx: Context, count: int, node_size: int) -> list[tuple[int, int]]:
    arch = ctx.job.arch
    if arch is None:
        return [(1, 1)]
    options = []
    tp = 1
    while tp <= min(count, node_size):
        if arch.heads % tp == 0:
            pp = 1
            while tp * pp <= count and pp <= max(1, arch.layers // 2):
                if count % (tp * pp) == 0:
                    options.append((tp, pp))
                pp *= 2
        tp *= 2
    return sorted(options, key=lambda o: (o[0] * o[1], o[1]))


def _shardings(ctx: Context, dp: int, pp: int, tp: int) -> tuple[str, ...]:
    if dp == 1:
        return ("none",)
    if ctx.job.arch is None:
        return ("ddp",)
    if pp > 1 or tp > 1:
        return ("ddp", "zero1")  # Megatron-style model parallelism shards only the optimizer (distributed optimizer)
    return ("ddp", "zero1", "zero2", "zero3")


def _target_micro_batch(ctx: Context, gpu: Gpu, precision: str, dp: int) -> int:
    job = ctx.job
    if job.batch_size:
        return job.batch_size
    measured = ctx.default_batch(gpu, precision)
    if measured:
        return measured
    if job.items_per_sequence > 1 and job.seq_len:
        cap = max(1, LLM_TOKENS_PER_MICRO_BATCH // job.seq_len)
        return max(1, min(cap, math.ceil(job.global_batch_seqs / dp)))
    return 32


def search_training(ctx: Context, gpu: Gpu, precision: str, node_size: int,
                    counts: list[int] | None = None) -> tuple[list[Candidate], list[Miss]]:
    """Every count of this GPU (or the given ones) with its fastest fitting layout, and the misses."""
    a = ctx.knowledge.assumptions
    job = ctx.job
    usable = gpu.memory_gb * (1 - ctx.headroom)
    room_total = usable * GB
    fabric = ctx.fabric(gpu)
    gpu_facts = ctx.gpu_facts(gpu, node_size)
    constraints = [r for r in ctx.rules_by_scope["plan"] if r.kind == "constraint"]
    others = [r for r in ctx.rules_by_scope["plan"] if r.kind != "constraint"]
    # Constraints only read a few plan facts: their verdict is cached on those values.
    tested = sorted({f for r in constraints for f in r.fields if f.startswith("plan.")})
    verdicts: dict[tuple[Any, ...], Firing | None] = {}
    model = TrainingMemoryModel(job, gpu, precision, a)
    candidates: list[Candidate] = []
    misses: list[Miss] = []
    recomputes: tuple[str, ...] = ("none", "selective", "full") if job.arch is not None else ("none",)
    if job.arch is not None and gpu.features.flash_attention:
        recomputes = ("none", "full")  # FlashAttention already drops what selective recomputation would
    for count in counts if counts is not None else counts_for(node_size, ctx.constraints.max_gpus):
        nodes = max(1, math.ceil(count / node_size))
        best: Candidate | None = None
        leanest: tuple[float, tuple[int, int, int, str, str]] | None = None
        blocked: Miss | None = None
        fits_seen_at: int | None = None
        for tp, pp in _model_parallel_options(ctx, count, node_size):
            if fits_seen_at is not None and tp * pp > 2 * fits_seen_at:
                break  # one model-parallel level past the first fit is enough: more only adds communication
            mp = tp * pp
            dp = count // mp
            if job.global_batch_seqs and dp > job.global_batch_seqs:
                # Each data-parallel rank needs at least one sequence of the global batch.
                blocked = blocked or Miss(gpu.id, count, "scale",
                                          f"a global batch of {job.global_batch_seqs} sequences feeds at most "
                                          f"{job.global_batch_seqs} data-parallel ranks, not {dp}", 2.5)
                continue
            target = _target_micro_batch(ctx, gpu, precision, dp)
            if not job.global_batch_seqs:
                # Non-LLM jobs run without accumulation: the global batch is dp x micro-batch, and past a
                # limit (8k images for ResNet-50, Goyal et al.) more ranks only shrink each GPU's batch.
                cap = int(a.defaults.max_global_batch_items.value // max(job.items_per_sequence, 1))
                if dp > cap:
                    blocked = blocked or Miss(gpu.id, count, "scale", f"{dp} data-parallel ranks exceed a global "
                                                                      f"batch of {cap}", 2.5)
                    continue
                target = max(1, min(target, cap // dp))
            shardings = _shardings(ctx, dp, pp, tp)
            # The leanest layout here (most sharding, most recomputation, smallest batch): if even it does not
            # fit, nothing at this tp x pp does.
            lean_zero = {"zero1": 1, "zero2": 2, "zero3": 3}.get(shardings[-1], 0)
            lean_need = model.fixed_high(mp, dp, lean_zero, count) + \
                model.per_sequence_high(recomputes[-1], tp) * (job.batch_size or 1)
            if lean_need > room_total:
                if leanest is None or lean_need < leanest[0]:
                    leanest = (lean_need, (tp, pp, dp, shardings[-1], recomputes[-1]))
                continue
            for sharding in shardings:
                zero = {"zero1": 1, "zero2": 2, "zero3": 3}.get(sharding, 0)
                room = room_total - model.fixed_high(mp, dp, zero, count)
                chosen: Layout | None = None
                for recompute in recomputes:
                    per_seq = model.per_sequence_high(recompute, tp)
                    mb_max = int(room // per_seq) if per_seq > 0 else target
                    if mb_max < 1 or (job.batch_size and mb_max < job.batch_size):
                        continue
                    mb = min(target, mb_max)
                    if mb * 2 < target and recompute != recomputes[-1]:
                        continue  # recomputation buys a micro-batch at least twice as large
                    accum = max(1, math.ceil(job.global_batch_seqs / (mb * dp))) if job.global_batch_seqs else 1
                    chosen = Layout(count=count, nodes=nodes, node_size=node_size, precision=precision, tp=tp, pp=pp,
                                    dp=dp, sharding=sharding, recompute=recompute, micro_batch=mb, grad_accum=accum)
                    break
                if chosen is None:
                    continue
                facts = _layout_facts(gpu_facts, chosen, gpu)
                key = tuple(facts[f] for f in tested)
                if key not in verdicts:
                    verdicts[key] = first_constraint(constraints, facts)
                hard = verdicts[key]
                if hard is not None:
                    blocked = Miss(gpu.id, count, "constraint", f"{hard.message} (rule {hard.rule_id})", 2.0)
                    continue
                step = training_step(job, gpu, chosen, fabric, a, model.per_sequence(chosen.recompute, tp))
                if step is None:
                    break
                fits_seen_at = fits_seen_at or mp
                if best is None or step.items / step.total_s > best.sol_items_per_s:
                    best = Candidate(gpu, chosen, None, regime_of(job), step=step)  # type: ignore[arg-type]
                break  # the first sharding that fits at this tp x pp: more sharding only adds traffic
        if best is not None:
            assert best.step is not None
            best.memory = model.components(best.layout, usable)
            best.facts = _plan_facts(gpu_facts, best.layout, best.memory, gpu, best.step.comm_fraction)
            best.firings = evaluate(others, best.facts)
            candidates.append(best)
        elif blocked is not None:
            misses.append(blocked)
        elif leanest is not None:
            tp, pp, dp, sharding, recompute = leanest[1]
            lean = Layout(count=count, nodes=nodes, node_size=node_size, precision=precision, tp=tp, pp=pp, dp=dp,
                          sharding=sharding, recompute=recompute, micro_batch=job.batch_size or 1)
            smallest = model.components(lean, usable)
            misses.append(Miss(gpu.id, count, "memory",
                               f"needs {smallest.high_gb:.0f} GB per GPU, has {gpu.memory_gb:g} "
                               f"({usable:.0f} usable; largest: {smallest.dominant})", 1.0 / count))
    return candidates, misses


def largest_batch_within(job: Job, gpu: Gpu, layout: Layout, a: Assumptions, b_max: int, weights_b: float,
                         kv_seq: float, decode_eff: float, target_ms: float) -> tuple[int, ServingTime | None]:
    """The largest batch (up to b_max) whose decode step, at this efficiency, meets the per-token target."""
    lo, hi = 0, b_max
    best: tuple[int, ServingTime | None] = (0, None)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        t = serving_times(job, gpu, layout.with_(micro_batch=mid), a, weights_b, kv_seq)
        if t is not None and t.decode_step_s / decode_eff * 1000.0 <= target_ms:
            lo = mid
            best = (mid, t)
        else:
            hi = mid - 1
    return best


def search_inference(ctx: Context, gpu: Gpu, precision: str, node_size: int,
                     decode_prior: Interval, prefill_prior: Interval) -> tuple[list[Candidate], list[Miss]]:
    """Every replica size (tensor parallel within a server, pipeline across servers) that serves the load."""
    a = ctx.knowledge.assumptions
    job = ctx.job
    arch = job.arch
    assert arch is not None
    usable = gpu.memory_gb * (1 - ctx.headroom)
    context = job.prompt_tokens + job.output_tokens
    gpu_facts = ctx.gpu_facts(gpu, node_size)
    cap = a.defaults.serving_utilisation_cap.value
    candidates: list[Candidate] = []
    misses: list[Miss] = []
    if peak_flops(gpu, precision) is None:
        return [], [Miss(gpu.id, 1, "precision", f"no {precision} support", 3.0)]
    shapes = [(tp, 1) for tp in (1, 2, 4, 8, 16) if tp <= node_size and arch.heads % tp == 0]
    shapes += [(node_size, pp) for pp in (2, 4, 8) if arch.heads % node_size == 0]
    smallest: tuple[int, Memory] | None = None
    for tp, pp in shapes:
        replica = tp * pp
        # Learned efficiencies from measured serving runs where the model applies; else the priors passed in.
        learned = learned_efficiency(job, precision, tp, engine_of(getattr(ctx, "workload", None) or job)[0])
        decode, prefill = (learned.decode, learned.prefill) if learned else (decode_prior, prefill_prior)
        layout = Layout(count=replica, nodes=pp if tp == node_size else 1, node_size=node_size, precision=precision,
                        tp=tp, pp=pp, dp=1, sharding="none", micro_batch=1)
        terms = inference_terms(job, gpu, layout, a, context)
        room = usable * GB - sum(hi for _, _, hi in terms.fixed)
        b_max = int(room // terms.kv_per_seq_high) if terms.kv_per_seq_high > 0 else 0
        if b_max < 1:
            mem = inference_memory(job, gpu, layout, a, usable, context)
            if smallest is None or mem.high_gb < smallest[1].high_gb:
                smallest = (replica, mem)
            continue
        weights_b = terms.fixed[0][2] / (1 + a.memory.weights_rel_error.value)
        kv_seq = terms.kv_per_seq_high / 1.01
        b, timing = largest_batch_within(job, gpu, layout, a, b_max, weights_b, kv_seq, decode.p50, job.tpot_ms)
        if timing is None:
            t1 = serving_times(job, gpu, layout, a, weights_b, kv_seq)
            tpot = (t1.decode_step_s / decode.p50 * 1000) if t1 else float("inf")
            misses.append(Miss(gpu.id, replica, "latency",
                               f"{tpot:.0f} ms per output token even at batch 1 (target {job.tpot_ms:g} ms)", 1.5))
            continue
        per_request_s = timing.prefill_s / prefill.p50 + job.output_tokens * timing.decode_step_s / decode.p50 / b
        capacity = 1.0 / per_request_s
        replicas = max(1, math.ceil(job.requests_per_s / (capacity * cap)))
        count = replicas * replica
        if count > ctx.constraints.max_gpus:
            misses.append(Miss(gpu.id, count, "scale", f"needs {count} GPUs for {job.requests_per_s:g} req/s, "
                                                       f"over --max-gpus {ctx.constraints.max_gpus}", 2.5))
            continue
        ttft_ms = timing.prefill_s / prefill.p50 * 1000
        fig = load_figures(job, gpu, precision, tp, replicas, engine_of(getattr(ctx, "workload", None) or job)[0],
                           job.requests_per_s) if learned and pp == 1 else None
        if fig and "ttft_ms" in fig:   # queueing at the offered load, not only the idle prefill time
            ttft_ms = max(ttft_ms, fig["ttft_ms"])
        if job.ttft_ms is not None and ttft_ms > job.ttft_ms:
            misses.append(Miss(gpu.id, count, "latency",
                               f"time to first token {ttft_ms:.0f} ms > target {job.ttft_ms:g} ms", 1.5))
            continue
        nodes = max(1, math.ceil(count / node_size)) if tp < node_size else replicas * pp
        full = layout.with_(count=count, nodes=nodes, dp=replicas, micro_batch=b)
        memory = inference_memory(job, gpu, full, a, usable, context)
        facts = _plan_facts(gpu_facts, full, memory, gpu, 0.0)
        firings = evaluate(ctx.rules_by_scope["plan"], facts)
        hard = [f for f in firings if f.kind == "constraint"]
        if hard:
            misses.append(Miss(gpu.id, count, "constraint", f"{hard[0].message} (rule {hard[0].rule_id})", 2.0))
            continue
        candidates.append(Candidate(gpu, full, memory, "decode", serving=timing, firings=firings, facts=facts))
    if not candidates and smallest is not None and not misses:
        replica, mem = smallest
        misses.append(Miss(gpu.id, replica, "memory", f"needs {mem.high_gb:.0f} GB per GPU for one sequence of "
                                                      f"{context} tokens, has {gpu.memory_gb:g} ({usable:.0f} usable)",
                           1.0))
    return candidates, misses


def efficiency_query(cand: Candidate, ctx: Context) -> Query:
    """The efficiency question for one training candidate."""
    fabric = ctx.fabric(cand.gpu)
    return Query(cand.regime, ctx.job, cand.gpu, cand.layout, cand.step,
                 fabric.gbs_per_gpu(cand.layout.node_size) * 8.0)
