"""Provides plan candidates and misses, the facts rules test, and the serving search (training:
plans_training)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.catalog.rules import Firing, Rule, evaluate
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.learned.efficiency.base import Interval, Query
from advisor.physics.memory import GB, Memory, inference_memory, inference_terms, serving_usable_gb
from advisor.physics.speed import ServingTime, StepTime, peak_flops, serving_times
from advisor.search.context import Context
from advisor.search.serving import engine_of, learned_efficiency, load_figures

NODE_STEPS = (
    2,
    3,
    4,
    6,
    8,
    12,
    16,
    24,
    32,
    48,
    64,
    96,
    128,
    192,
    256,
    384,
    512,
    768,
    1024,
    1536,
    2048,
    3072,
    4096,
    6144,
    8192,
)


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
    alternatives: list[Candidate] = field(default_factory=list)
    """Runner-up layouts at the same GPU and count, fastest first (training)."""

    def predicted_s(self, efficiency: float) -> float:
        """Step time at this efficiency (what the search ranks training layouts by)."""
        assert self.step is not None
        return self.step.total_s / efficiency

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


def layout_facts(base: dict[str, Any], layout: Layout, gpu: Gpu) -> dict[str, Any]:
    return {
        **base,
        "plan.precision": layout.precision,
        "plan.count": layout.count,
        "plan.nodes": layout.nodes,
        "plan.tp": layout.tp,
        "plan.cp": layout.cp,
        "plan.ep": layout.ep,
        "plan.tp_outside_nvlink": layout.tp > gpu.nvlink_domain,
        "plan.pp": layout.pp,
        "plan.dp": layout.dp,
        "plan.sharding": layout.sharding,
        "plan.recompute": layout.recompute,
        "plan.micro_batch": layout.micro_batch,
    }


def plan_facts(
    base: dict[str, Any], layout: Layout, memory: Memory, gpu: Gpu, comm_fraction: float
) -> dict[str, Any]:
    return {
        **layout_facts(base, layout, gpu),
        "plan.memory_fraction": round(memory.central_gb / memory.capacity_gb, 3),
        "plan.dominant": memory.dominant,
        "plan.comm_fraction": round(comm_fraction, 2),
    }


def first_constraint(rules: list[Rule], facts: dict[str, Any]) -> Firing | None:
    """The first hard constraint that holds, rendered; None when the plan is allowed."""
    for rule in rules:
        if rule.test(facts):
            return evaluate([rule], facts)[0]
    return None


def largest_batch_within(
    job: Job,
    gpu: Gpu,
    layout: Layout,
    a: Assumptions,
    b_max: int,
    weights_b: float,
    kv_seq: float,
    decode_eff: float,
    target_ms: float,
) -> tuple[int, ServingTime | None]:
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


def search_inference(
    ctx: Context, gpu: Gpu, precision: str, node_size: int, decode_prior: Interval, prefill_prior: Interval
) -> tuple[list[Candidate], list[Miss]]:
    """Every replica size (tensor parallel within a server, pipeline across servers) that serves the load."""
    a = ctx.knowledge.assumptions
    job = ctx.job
    arch = job.arch
    assert arch is not None
    usable = serving_usable_gb(gpu, a, ctx.headroom)
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
        layout = Layout(
            count=replica,
            nodes=pp if tp == node_size else 1,
            node_size=node_size,
            precision=precision,
            tp=tp,
            pp=pp,
            dp=1,
            sharding="none",
            micro_batch=1,
        )
        terms = inference_terms(job, gpu, layout, a, context)
        room = usable * GB - sum(hi for _, _, hi in terms.fixed)
        b_max = int(room // terms.kv_per_seq_high) if terms.kv_per_seq_high > 0 else 0
        if b_max < 1:
            mem = inference_memory(job, gpu, layout, a, usable, context)
            if smallest is None or mem.central_gb < smallest[1].central_gb:
                smallest = (replica, mem)
            continue
        weights_b = terms.fixed[0][2] / (1 + a.memory.weights_rel_error.value)
        kv_seq = terms.kv_per_seq_high / 1.01
        b, timing = largest_batch_within(
            job, gpu, layout, a, b_max, weights_b, kv_seq, decode.p50, job.tpot_ms
        )
        if timing is None:
            t1 = serving_times(job, gpu, layout, a, weights_b, kv_seq)
            tpot = (t1.decode_step_s / decode.p50 * 1000) if t1 else float("inf")
            misses.append(
                Miss(
                    gpu.id,
                    replica,
                    "latency",
                    f"{tpot:.0f} ms per output token even at batch 1 (target {job.tpot_ms:g} ms)",
                    1.5,
                )
            )
            continue
        per_request_s = (
            timing.prefill_s / prefill.p50 + job.output_tokens * timing.decode_step_s / decode.p50 / b
        )
        capacity = 1.0 / per_request_s
        replicas = max(1, math.ceil(job.requests_per_s / (capacity * cap)))
        count = replicas * replica
        if count > ctx.constraints.max_gpus:
            misses.append(
                Miss(
                    gpu.id,
                    count,
                    "scale",
                    f"needs {count} GPUs for {job.requests_per_s:g} req/s, "
                    f"over --max-gpus {ctx.constraints.max_gpus}",
                    2.5,
                )
            )
            continue
        ttft_ms = timing.prefill_s / prefill.p50 * 1000
        fig = (
            load_figures(
                job,
                gpu,
                precision,
                tp,
                replicas,
                engine_of(getattr(ctx, "workload", None) or job)[0],
                job.requests_per_s,
            )
            if learned and pp == 1
            else None
        )
        if fig and "ttft_ms" in fig:  # queueing at the offered load, not only the idle prefill time
            ttft_ms = max(ttft_ms, fig["ttft_ms"])
        if job.ttft_ms is not None and ttft_ms > job.ttft_ms:
            misses.append(
                Miss(
                    gpu.id,
                    count,
                    "latency",
                    f"time to first token {ttft_ms:.0f} ms > target {job.ttft_ms:g} ms",
                    1.5,
                )
            )
            continue
        nodes = max(1, math.ceil(count / node_size)) if tp < node_size else replicas * pp
        full = layout.with_(count=count, nodes=nodes, dp=replicas, micro_batch=b)
        memory = inference_memory(job, gpu, full, a, usable, context)
        facts = plan_facts(gpu_facts, full, memory, gpu, 0.0)
        firings = evaluate(ctx.rules_by_scope["plan"], facts)
        hard = [f for f in firings if f.kind == "constraint"]
        if hard:
            misses.append(
                Miss(gpu.id, count, "constraint", f"{hard[0].message} (rule {hard[0].rule_id})", 2.0)
            )
            continue
        candidates.append(
            Candidate(gpu, full, memory, "decode", serving=timing, firings=firings, facts=facts)
        )
    if not candidates and smallest is not None and not misses:
        replica, mem = smallest
        misses.append(
            Miss(
                gpu.id,
                replica,
                "memory",
                f"needs {mem.central_gb:.0f} GB per GPU for one sequence of "
                f"{context} tokens, has {gpu.memory_gb:g} {gpu.memory_unit} ({usable:.0f} GB usable)",
                1.0,
            )
        )
    return candidates, misses


def efficiency_query(cand: Candidate, ctx: Context) -> Query:
    """The efficiency question for one training candidate."""
    fabric = ctx.fabric(cand.gpu)
    return Query(
        cand.regime,
        ctx.job,
        cand.gpu,
        cand.layout,
        cand.step,
        fabric.gbs_per_gpu(cand.layout.node_size) * 8.0,
    )
