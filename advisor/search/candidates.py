"""Provides plan candidates and misses, and the facts rules test (the searches: training.py, serving.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.catalog.gpus import Gpu
from advisor.catalog.rules import Firing, Rule, evaluate
from advisor.job.layout import Layout
from advisor.learned.efficiency.base import Query
from advisor.physics.memory import Memory
from advisor.physics.speed import StepTime
from advisor.search.context import Context

if TYPE_CHECKING:
    from advisor.catalog.capacity import Link
    from advisor.search.served import Served

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


@dataclass(slots=True, repr=False, eq=False)
class Candidate:
    """A plan that fits: its layout, memory and speed-of-light timing (efficiency and cost come later)."""

    gpu: Gpu
    layout: Layout
    memory: Memory
    regime: str
    step: StepTime | None = None
    serving: Served | None = None
    firings: list[Firing] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    alternatives: list[Candidate] = field(default_factory=list)
    """Runner-up layouts at the same GPU and count, fastest first (training)."""
    link: Link | None = None
    """The documented network between the instances this plan was searched on (None: not known)."""
    offer_group: str = ""
    """Which offers price it (advisor/search/links.py; empty: every offer of its GPU)."""

    def predicted_s(self, efficiency: float) -> float:
        """Step time at this efficiency (what the search ranks training layouts by)."""
        assert self.step is not None
        return self.step.total_s / efficiency

    @property
    def sol_items_per_s(self) -> float:
        """Whole-system throughput at 100% efficiency (training)."""
        assert self.step is not None
        return self.step.items / self.step.total_s


@dataclass(frozen=True, slots=True, repr=False)
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
        "plan.tp_across_servers": layout.tp > gpu.gpus_per_node,
        "plan.pp": layout.pp,
        "plan.mp_across_nodes": mp_across_nodes(layout),
        "plan.dp": layout.dp,
        "plan.sharding": layout.sharding,
        "plan.recompute": layout.recompute,
        "plan.micro_batch": layout.micro_batch,
        "plan.grad_accum": layout.grad_accum,
        "plan.bubble_pct": bubble_pct(layout),
    }


def mp_across_nodes(layout: Layout) -> bool:
    """Whether a model-parallel group (tp x cp x ep x pp GPUs, placed in a server first) spans instances."""
    return layout.nodes > 1 and layout.tp * layout.cp * layout.ep * layout.pp > layout.node_size


def bubble_pct(layout: Layout, step: StepTime | None = None) -> int:
    """The pipeline bubble as a share of the whole step, in %: the step model's own bubble time over its step
    time when the step is known, else f / (1 + f) with f = (p - 1) / (m v), the bubble over the ideal compute
    (Narayanan et al. 2021, 2.2.2: f is not a share of the step, and passes 100% at m v < p - 1)."""
    if layout.pp <= 1:
        return 0
    if step is not None:
        return round(100 * step.bubble_s / step.total_s) if step.total_s > 0 else 0
    f = (layout.pp - 1) / (layout.grad_accum * layout.virtual)
    return round(100 * f / (1 + f))


def plan_facts(
    base: dict[str, Any],
    layout: Layout,
    memory: Memory,
    gpu: Gpu,
    comm_fraction: float,
    recompute_needed: bool = False,
    step: StepTime | None = None,
) -> dict[str, Any]:
    """The facts plan rules test; recompute_needed: the plan does not fit without its recomputation; step: the
    training step timed at speed of light (its bubble share replaces the closed form)."""
    return {
        **layout_facts(base, layout, gpu),
        "plan.bubble_pct": bubble_pct(layout, step),
        "plan.memory_fraction": round(memory.central_gb / memory.capacity_gb, 3),
        "plan.dominant": memory.dominant,
        "plan.comm_fraction": round(comm_fraction, 2),
        "plan.recompute_needed": recompute_needed,
    }


def first_constraint(rules: list[Rule], facts: dict[str, Any]) -> Firing | None:
    """The first hard constraint that holds, rendered; None when the plan is allowed."""
    for rule in rules:
        if rule.test(facts):
            return evaluate([rule], facts)[0]
    return None


def efficiency_query(cand: Candidate, ctx: Context) -> Query:
    """The efficiency question for one training candidate."""
    fabric = ctx.fabric(cand.gpu, cand.link)
    return Query(
        cand.regime,
        ctx.job,
        cand.gpu,
        cand.layout,
        cand.step,
        fabric.gbs_per_gpu(cand.layout.node_size) * 8.0,
    )
