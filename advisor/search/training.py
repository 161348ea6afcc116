"""Provides search_training(): for one GPU, every count's fastest fitting layouts (and runner-ups), or the
real reason none fits. Every value the user stated is held; the rest is searched, pruned only by a lower
bound."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from advisor.catalog.gpus import Gpu
from advisor.catalog.stacks import stack_of
from advisor.job.inputs import virtual_stages
from advisor.job.layout import Layout
from advisor.learned.efficiency.base import Interval, regime_of
from advisor.physics.memory import GB, Memory, TrainingMemoryModel, usable_gb
from advisor.physics.speed import (
    StepModel,
    StepTime,
    network_for,
    peak_flops,
    training_flops_per_item,
)
from advisor.search.candidates import (
    Candidate,
    Miss,
    counts_for,
    evaluate,
    first_constraint,
    layout_facts,
    mp_across_nodes,
    plan_facts,
)
from advisor.search.context import Context

LLM_TOKENS_PER_MICRO_BATCH = 16384  # MosaicML's tuned runs hold about 8-16k tokens per GPU per micro-batch
RUNNERS_UP = 3
# Without a figure of the efficiency model's own error, a layout must be this much faster than the simplest
# to be preferred over it (about the held-out median error of the LLM efficiency model).
LAYOUT_MARGIN = 0.15
RECOMPUTE_ORDER = ("none", "selective", "full")  # cheapest in time first, leanest in memory last
BOUND_MARGIN = 1e-9  # a bound is exact in real numbers; this covers its rounding against the step's own
SHARDING = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}


class Shape(NamedTuple):
    """The model-parallel shape of a layout: what splits the model, and the data-parallel ranks left (a tuple:
    the search keys its memos on it, and a tuple hashes without a Python call)."""

    tp: int
    pp: int
    cp: int
    ep: int
    dp: int
    virtual: int = 1


@dataclass(order=True, repr=False)
class _Found:
    """A fitting layout kept by a count's search, ordered by its time, then by when it was found."""

    time: float
    order: int
    layout: Layout = field(compare=False)
    step: StepTime = field(compare=False)
    variant: tuple[Any, ...] = field(compare=False, default=())


@dataclass(slots=True, repr=False, eq=False)
class _CountResult:
    """What one count's search saw: the fastest layouts, and why the others did not run."""

    found: list[_Found] = field(default_factory=list)
    batch_miss: Miss | None = None
    constraint_miss: Miss | None = None
    leanest: tuple[float, Layout] | None = None
    evaluated: int = 0
    simplest: _Found | None = None
    """The fastest layout of the least model parallelism that fits: kept even when slower than the runner-ups,
    so that the choice can prefer it unless another layout is faster by more than the model's error."""
    simplest_cx: tuple[int, ...] | None = None
    worst: float = math.inf
    """The slowest kept time once RUNNERS_UP layouts are kept (infinite before): what the pruning threshold
    and the runner-ups' admission read, kept as `found` changes rather than recomputed per trial."""


@functools.lru_cache(maxsize=64)
def _powers(limit: int) -> tuple[int, ...]:
    # Asked for thousands of times per search, for a handful of limits.
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return tuple(out)


def complexity(tp: int, pp: int, cp: int, ep: int) -> tuple[int, ...]:
    """How much model parallelism a layout uses, simplest first: the model-parallel degree, then pipeline,
    context, tensor and expert parallelism (a pipeline is harder to run than a tensor split)."""
    return (tp * pp * cp * ep, pp, cp, tp, ep)


def layout_complexity(layout: Layout) -> tuple[int, ...]:
    """complexity() of a layout."""
    return complexity(layout.tp, layout.pp, layout.cp, layout.ep)


class TrainingSearch:
    """The search of one job on one GPU type at one precision (constants precomputed once)."""

    def __init__(
        self,
        ctx: Context,
        gpu: Gpu,
        precision: str,
        node_size: int,
        *,
        prune: bool = True,
        dominance: bool = True,
        leanest: bool = True,
    ) -> None:
        """`prune` skips shapes by their lower bound; `dominance` drops layouts another one always matches or
        beats (DDP where ZeRO-1 runs, a costlier recomputation or ZeRO-2 that fits no larger micro-batch):
        both on in use; the exhaustive reference turns the bound off, the naive one both. `leanest` False
        stops looking for the leanest layout once a hard rule has refused the count (the refusal then names
        the rule, so only predict, which shows the leanest memory too, needs it)."""
        self.ctx, self.gpu, self.precision, self.node_size = ctx, gpu, precision, node_size
        self.prune, self.dominance, self.keep_leanest = prune, dominance, leanest
        self.job, self.a, self.cfg = ctx.job, ctx.knowledge.assumptions, ctx.job.config
        self.stack = stack_of(ctx.knowledge, ctx.job.stack)
        self.usable = usable_gb(gpu, ctx.knowledge.assumptions, ctx.headroom)
        self.room_total = self.usable * GB
        self.fabric = ctx.fabric(gpu)
        self.gpu_facts = ctx.gpu_facts(gpu, node_size)
        rules = ctx.rules_by_scope["plan"]
        self.constraints = [r for r in rules if r.kind == "constraint"]
        self.others = [r for r in rules if r.kind != "constraint"]
        self.tested = sorted({f for r in self.constraints for f in r.fields if f.startswith("plan.")})
        self.verdicts: dict[tuple[Any, ...], Any] = {}
        self.model = TrainingMemoryModel(self.job, gpu, precision, self.a)
        self.peak = peak_flops(gpu, precision)
        self.steps = StepModel(self.job, gpu, self.fabric, self.a)
        self.virtual = virtual_stages(self.cfg.pp_schedule) if self.cfg.pp_schedule else 1
        self.peak_or_zero = self.peak or 0.0
        self.bounds: dict[tuple[Shape, str], float] = {}
        self.flops_per_item: dict[str, float] = {}
        self.floors: dict[tuple[int, int, int, int, str, int], float] = {}
        self._shapes: dict[int, list[Shape]] = {}
        self._virtuals: dict[int, tuple[int, ...]] = {}
        self._schedules: dict[Shape, tuple[Shape, ...]] = {}
        self._quick: dict[Shape, float] = {}
        self.getters = _fact_getters(self.tested, gpu)
        # When the hard rules test no fact of a trial's own (its recomputation or micro-batch), a rule that
        # refuses one trial of a sharded shape refuses them all: judged once per shape and sharding.
        self.per_base = self.getters is not None and not {"plan.recompute", "plan.micro_batch"} & set(
            self.tested
        )
        self._recomputes = self._recompute_options()
        self.trial_terms: dict[tuple[Shape, str], tuple[float, float]] = {}
        self.shape_bounds: dict[Shape, float] = {}
        self.stage_bounds: dict[tuple[Shape, str, int], float] = {}
        self.batches: dict[tuple[int, int, int, int, int], list[int]] = {}
        self.tokens_per_gpu = self.a.defaults["pretrain_global_batch_tokens_per_gpu"].value
        self._global: dict[int, int] = {}
        self.quick: dict[tuple[Shape, str], float] = {}
        self.p2p_floors: dict[Shape, float] = {}

    # --- the options each dimension may take -------------------------------------------------------------
    def global_batch(self, count: int) -> int:
        """Sequences per optimizer step at this count: the user's, else the default, which for pre-training
        grows with the GPUs to at least defaults.pretrain_global_batch_tokens_per_gpu tokens per GPU (runs on
        thousands of GPUs grow their batch: Llama 3's 16M tokens on 16K GPUs)."""
        got = self._global.get(count)
        if got is None:
            job, got = self.job, self.job.global_batch_seqs
            if got and not job.global_batch_given and job.kind == "pretrain":
                got = max(got, math.ceil(count * self.tokens_per_gpu / max(job.seq_len, 1)))
            if got and not job.global_batch_given and self.cfg.dp:
                got = max(got, self.cfg.dp)  # a stated data-parallel size: a sequence for every rank
            self._global[count] = got
        return got

    def recomputes(self) -> tuple[str, ...]:
        """Recomputation policies to try, cheapest first (fixed for the search: asked per sharding)."""
        return self._recomputes

    def _recompute_options(self) -> tuple[str, ...]:
        if self.cfg.recompute is not None:
            return (self.cfg.recompute,)
        if self.job.arch is None:
            return ("none",)
        default = self.stack.default_recompute(self.job.params)
        if default != "search":
            # What the stack's own recipes use for this size, or a leaner policy where that does not fit:
            # a typical run keeps its stack's default, not the fastest policy that fits.
            start = RECOMPUTE_ORDER.index(default)
            return tuple(r for r in RECOMPUTE_ORDER[start:] if r != "selective" or r == default)
        if self.gpu.features.flash_attention:
            return ("none", "full")  # FlashAttention already drops what selective recomputation would
        return ("none", "selective", "full")

    def shapes(self, count: int) -> list[Shape]:
        """Every tp x pp x cp x ep x dp = count the model and the stated values allow (memoised)."""
        shapes = self._shapes.get(count)
        if shapes is None:
            shapes = self._shapes[count] = self._enumerate(count)
        return shapes

    def _enumerate(self, count: int) -> list[Shape]:
        c = self.cfg
        if self.job.arch is None:
            return [Shape(1, 1, 1, 1, count)] if c.dp in (None, count) else []
        tps, pps, cps, eps = self._options(count)
        out = []
        for tp in tps:
            for pp in pps:
                for cp in cps:
                    if count % (tp * pp * cp):
                        continue
                    dp = count // (tp * pp * cp)
                    if (c.dp is not None and dp != c.dp) or (c.shard_group and (dp * cp) % c.shard_group):
                        continue
                    virtual = self.virtual if pp > 1 else 1
                    # A stated expert parallelism may fold over the tensor-parallel ranks (Layout.expert_tp).
                    ranks = dp * cp * (tp if c.ep else 1)
                    out += [Shape(tp, pp, cp, ep, dp, virtual) for ep in eps if ranks % ep == 0]
        return out

    def schedules(self, shape: Shape) -> tuple[Shape, ...]:
        """The shape under each pipeline schedule the search tries (virtuals()), the shape's own (plain 1F1B,
        or the stated schedule) first, then by their bound: the schedule is chosen within a shape, as its
        micro-batch is (the rules and the sharding read neither), the likeliest first so that it prunes the
        others (memoised, with the smallest of their quick bounds, quick_bound())."""
        got = self._schedules.get(shape)
        if got is None:
            count = shape.dp * shape.tp * shape.pp * shape.cp
            own = self.compute_bound(shape, self.recomputes()[0], count) + self._p2p_floor(shape)
            others = self._schedule_bounds(shape, count)
            others.sort(key=lambda kv: kv[0])
            got = self._schedules[shape] = (shape, *(v for _, v in others))
            self._quick[shape] = min(own, others[0][0]) if others else own
        return got

    def _schedule_bounds(self, shape: Shape, count: int) -> list[tuple[float, Shape]]:
        """Each searched schedule of the shape with its compute_bound() at the cheapest recomputation plus its
        _p2p_floor(), the same arithmetic with what the schedules share worked out once: the compute per item
        of each split of the layers over the stages (most schedules split them alike, step_ops.chunk_sizes),
        the micro-batches per step (rounded up to a multiple of pp for all of them) and the sends' floor per
        chunk."""
        others = [n for n in self.virtuals(shape.pp) if n != shape.virtual]
        if not others:
            return []
        tp, pp, cp, ep, dp, _ = shape
        cheapest, composed = self.recomputes()[0], self.steps.composed
        m = self.accum(Shape(tp, pp, cp, ep, dp, others[0]), 1, self.global_batch(count))
        shared: dict[object, tuple[float, float]] = {}
        out = []
        for n in others:
            each = Shape(tp, pp, cp, ep, dp, n)
            split = composed.layer_counts(pp, n) if composed is not None else None
            got = shared.get(split)
            if got is None:
                got = shared[split] = (
                    self._compute_per_item(each, cheapest, count),
                    self._p2p_floor(each) / n,
                )
            per_item, sends = got
            out.append((per_item * (1 + (pp - 1) / (m * n)) + sends * n, each))
        return out

    def quick_bound(self, shape: Shape) -> float:
        """The smallest compute bound (compute_bound() and the pipeline's sends) of the shape's schedules at
        the cheapest recomputation: what the count's shapes are ranked by."""
        got = self._quick.get(shape)
        if got is None:
            self.schedules(shape)
            got = self._quick[shape]
        return got

    def virtuals(self, pp: int) -> tuple[int, ...]:
        """The model chunks per pipeline stage to try: the stated schedule's; else, for a stack that runs an
        interleaved 1F1B schedule (Stack.interleaved), plain 1F1B and every v whose pp x v chunks split the
        layers evenly, or the layers with the embedding and the loss counted as one each (Megatron-LM's
        rules: the layers per stage divisible by the layers per chunk, --account-for-embedding- and
        -loss-in-pipeline-split; step_ops.chunk_sizes); plain 1F1B elsewhere (memoised)."""
        if pp == 1:
            return (1,)
        if self.cfg.pp_schedule:
            return (self.virtual,)
        got = self._virtuals.get(pp)
        if got is None:
            arch = self.job.arch
            got = (1,)
            if arch is not None and self.stack.interleaved:
                n = arch.layers
                got = (
                    1,
                    *(v for v in range(2, (n + 2) // pp + 1) if not n % (pp * v) or not (n + 2) % (pp * v)),
                )
            self._virtuals[pp] = got
        return got

    def searched_schedule(self, shape: Shape) -> bool:
        """Whether the shape's interleaved schedule is the search's choice (not the user's)."""
        return shape.virtual > 1 and not self.cfg.pp_schedule

    def _options(self, count: int) -> tuple[list[int], list[int], list[int], list[int]]:
        """The tp, pp, cp and ep sizes to try: the stated one, else those the model allows and the stack
        searches (a dimension the stack does not search stays 1 unless stated; check_config has checked a
        stated value against the stack)."""
        arch, c, free = self.job.arch, self.cfg, self.stack.search
        assert arch is not None
        tps = [t for t in _powers(min(count, self.node_size)) if arch.heads % t == 0]
        pps = [p for p in _powers(min(count, arch.layers)) if p == 1 or p <= arch.layers // 2]
        seq = self.job.seq_len
        cps = [x for x in _powers(16) if x == 1 or (seq >= 16384 and seq % x == 0)]
        eps = [e for e in _powers(arch.experts) if arch.experts % e == 0] if arch.is_moe else [1]
        found = {"tp": tps, "pp": pps, "cp": cps, "ep": eps}
        out = []
        for dim, sizes in found.items():
            stated = getattr(c, dim)
            out.append([stated] if stated else [v for v in sizes if v == 1 or dim in free])
        return out[0], out[1], out[2], out[3]

    def zeros(self, shape: Shape) -> list[int]:
        """ZeRO stages to try (0 = DDP); FSDP/ZeRO combine with tensor and pipeline parallelism (2D/3D)."""
        if self.cfg.zero is not None:
            return [self.cfg.zero]
        if shape.dp * shape.cp == 1 or self.job.arch is None:
            return [0]
        return list(self.stack.zero)

    def micro_batches(self, shape: Shape, mb_max: int) -> list[int]:
        """Micro-batches to try up to what memory allows (memoised on what they depend on; not to be
        changed by the caller)."""
        g = self.global_batch(shape.dp * shape.tp * shape.pp * shape.cp)
        interleaved = shape.pp if self.searched_schedule(shape) else 0
        key = (shape.dp, shape.cp, mb_max, g, interleaved)
        options = self.batches.get(key)
        if options is None:
            options = self._micro_batches(shape, mb_max, g)
            if interleaved and g and self.job.global_batch_given:
                # The interleaved schedule runs its micro-batches in groups of pp (Megatron-Core refuses a
                # last group smaller than pp; PyTorch's Interleaved1F1B wants a multiple of the ranks): a
                # stated global batch keeps the micro-batches it allows.
                options = [mb for mb in options if math.ceil(g / (mb * shape.dp)) % shape.pp == 0]
            self.batches[key] = options
        return options

    def accum(self, shape: Shape, mb: int, g: int) -> int:
        """Micro-batches per step at a micro-batch size: the global batch over the data-parallel ranks,
        rounded up (a step then does more work, ranked per item); a searched interleaved schedule's rounded
        up to a multiple of pp, where the global batch is the tool's choice (a stated one keeps only the
        micro-batches that divide it so, micro_batches())."""
        m = max(1, math.ceil(g / (mb * shape.dp))) if g else 1
        if shape.virtual > 1 and not self.cfg.pp_schedule and m % shape.pp:
            m += shape.pp - m % shape.pp
        return m

    def _micro_batches(self, shape: Shape, mb_max: int, g: int) -> list[int]:
        job = self.job
        if job.batch_size:
            return [job.batch_size] if job.batch_size <= mb_max else []
        if not g:  # non-LLM: the benchmarks' per-GPU batch, capped by the global-batch limit
            cap = int(self.a.defaults["max_global_batch_items"].value // max(job.items_per_sequence, 1))
            target = self.ctx.default_batch(self.gpu, self.precision) or 32
            return [max(1, min(target, cap // shape.dp, mb_max))]
        per_rank = max(1, g // shape.dp)
        cap = max(1, LLM_TOKENS_PER_MICRO_BATCH * shape.cp // max(job.seq_len, 1))
        top = min(mb_max, per_rank, cap)
        options = sorted(set(_powers(top)) | {top})
        if job.global_batch_given:
            options = [m for m in options if per_rank % m == 0]
        return options

    # --- bounds ------------------------------------------------------------------------------------------
    # Each bound is seconds per item that no layout of the shape (and recomputation) can beat: the step's
    # compute at peak, the smallest pipeline bubble, and the bandwidth part of the tensor- and expert-parallel
    # traffic. Every term of the real step is at least its bound's term (the real step's roofline is at least
    # its compute, a larger micro-batch only lengthens the bubble, latencies only add), so pruning on it is
    # exact; the search compares it with the k-th best time kept, with a margin for rounding.
    def compute_bound(self, shape: Shape, recompute: str, count: int) -> float:
        """A cheaper, looser bound per item: compute (at peak, or the composed step's floor) and the smallest
        bubble only (memoised)."""
        key = (shape, recompute)
        got = self.quick.get(key)
        if got is None:
            per_item = self._compute_per_item(shape, recompute, count)
            m_max = self.accum(shape, 1, self.global_batch(count))
            got = self.quick[key] = per_item * (1 + (shape.pp - 1) / (m_max * shape.virtual))
        return got

    def bound_per_item(self, shape: Shape, recompute: str) -> float:
        """The lower bound as seconds per item: compute_bound plus the model-parallel bandwidth floor."""
        key = (shape, recompute)
        bound = self.bounds.get(key)
        if bound is None:
            count = shape.dp * shape.tp * shape.pp * shape.cp
            floor = self._comm_floor(shape.tp, shape.pp, shape.cp, shape.ep, recompute, shape.virtual)
            bound = self.bounds[key] = (
                self.compute_bound(shape, recompute, count)
                + floor / (shape.dp * max(self.job.items_per_sequence, 1))
                + self._p2p_floor(shape)
            )
        return bound

    def _p2p_floor(self, shape: Shape) -> float:
        """Seconds per item of a pipeline's sends no micro-batch beats (a composed step): 2 v sends of each
        sequence's activations per stage boundary, latency-free, at the best bus bandwidth the tables give a
        send at any size; what makes more chunks per stage cost more (memoised)."""
        got = self.p2p_floors.get(shape)
        if got is None:
            got = 0.0
            composed = self.steps.composed
            if composed is not None and shape.pp > 1:
                count = shape.dp * shape.tp * shape.pp * shape.cp
                stride = shape.tp * shape.cp * shape.dp
                nodes = 2 if stride >= self.node_size and count > self.node_size else 1
                act = 2.0 if self.precision not in ("fp32", "tf32") else 4.0
                per_seq = max(1, self.job.seq_len // shape.cp) * composed.arch.hidden * act / shape.tp
                best = composed.prices.best_busbw("send_recv", 2, nodes)
                got = 2.0 * shape.virtual * per_seq / best / (shape.dp * max(self.job.items_per_sequence, 1))
            self.p2p_floors[shape] = got
        return got

    def _trial_bound(self, shape: Shape, recompute: str, mb: int) -> float:
        """The bound of one micro-batch size: its bubble follows its own number of micro-batches."""
        g = self.global_batch(shape.dp * shape.tp * shape.pp * shape.cp)
        m = self.accum(shape, mb, g)
        terms = self.trial_terms.get((shape, recompute))
        if terms is None:  # the terms that do not depend on the micro-batch, memoised
            count = shape.dp * shape.tp * shape.pp * shape.cp
            per_item = self._compute_per_item(shape, recompute, count)
            floor = self._comm_floor(shape.tp, shape.pp, shape.cp, shape.ep, recompute, shape.virtual)
            terms = self.trial_terms[(shape, recompute)] = (
                per_item,
                floor / (shape.dp * max(self.job.items_per_sequence, 1)) + self._p2p_floor(shape),
            )
        return terms[0] * (1 + (shape.pp - 1) / (m * shape.virtual)) + terms[1]

    def _compute_per_item(self, shape: Shape, recompute: str, count: int) -> float:
        """Compute seconds per item no layout of the shape beats: the job's FLOPs at peak, or, where the step
        is composed, the slowest stage's operations at the best rates the tables give any micro-batch
        (ComposedStep.compute_floor), which prunes far more of a search's layouts."""
        per_item = self._flops_per_item(recompute) / (count * self.peak_or_zero)
        composed = self.steps.composed
        if composed is not None:
            floor = composed.compute_floor(
                self.precision,
                shape.tp,
                shape.pp,
                shape.cp,
                shape.ep,
                recompute,
                shape.virtual,
                self.node_size,
            )
            per_item = max(per_item, floor / (shape.dp * max(self.job.items_per_sequence, 1)))
        return per_item

    def _flops_per_item(self, recompute: str) -> float:
        flops = self.flops_per_item.get(recompute)
        if flops is None:
            probe = Layout(count=1, nodes=1, node_size=1, precision=self.precision, recompute=recompute)
            flops = self.flops_per_item[recompute] = training_flops_per_item(self.job, probe, self.a)
        return flops

    def _comm_floor(self, tp: int, pp: int, cp: int, ep: int, recompute: str, virtual: int = 1) -> float:
        """Latency-free tensor- and expert-parallel seconds of one sequence per data-parallel rank: the real
        traffic is linear in the micro-batch plus latencies, and a rank runs at least g/dp sequences a step
        (memoised across counts: it does not depend on the data-parallel size)."""
        if self.job.arch is None or tp * ep == 1:
            return 0.0
        key = (tp, pp, cp, ep, recompute, virtual)
        floor = self.floors.get(key)
        composed = self.steps.composed
        if floor is None and composed is not None:
            # The step composed from measured operations: its own TP floor (its EP traffic has none here).
            floor = self.floors[key] = composed.tp_floor(self.precision, tp, pp, cp, recompute, virtual)
        if floor is None:
            from advisor.physics.speed import _model_comm

            probe = Layout(
                count=tp * pp * cp * ep,
                nodes=1,
                node_size=self.node_size,
                precision=self.precision,
                tp=tp,
                pp=pp,
                cp=cp,
                ep=ep,
                dp=ep,
                recompute=recompute,
            )
            net = network_for(self.gpu, probe, self.fabric, self.a, max(tp, 1))  # as training_step
            net = type(net)(
                net.intra_gbs, net.inter_gbs, net.node_size, net.pod_gpus, net.oversubscription, 0.0, 0.0
            )
            tp_comm, _, _, ep_comm = _model_comm(self.job, probe, net, 0.0)
            floor = self.floors[key] = tp_comm + ep_comm
        return floor

    # --- one count ----------------------------------------------------------------------------------------
    def search_count(self, count: int) -> _CountResult:
        """The fastest fitting layouts at one count (the best and its runner-ups), exactly as the exhaustive
        search finds them: shapes go in order of their compute bound, and a shape or recomputation policy is
        skipped only when its bound exceeds the k-th best time kept."""
        res = _CountResult()
        if self.peak is None:
            return res  # no peak for this precision: callers refuse it before searching
        nodes = max(1, math.ceil(count / self.node_size))
        cheapest = self.recomputes()[0]
        floor_scale = min(self._flops_per_item(r) for r in self.recomputes()) / self._flops_per_item(cheapest)
        least = min((complexity(s.tp, s.pp, s.cp, s.ep) for s in self.shapes(count)), default=None)
        for quick, shape in self._ranked(count):
            threshold = self._shape_threshold(res, shape)
            if self.prune and quick * floor_scale > threshold:
                if res.simplest_cx == least and quick * floor_scale > self._simplest_threshold(res, least):
                    break  # sorted: no later shape can beat the k-th best or the simplest layout either
                continue
            # Nothing exceeds an infinite threshold (nothing kept yet): the bound is not worked out then.
            if self.prune and threshold != math.inf and self._shape_bound(shape) > threshold:
                continue
            if not self._batch_ok(shape, count, res):
                continue
            self._search_shape(shape, count, nodes, res)
        return res

    def _ranked(self, count: int) -> list[tuple[float, Shape]]:
        """The count's shapes by their compute bound at the cheapest recomputation and their pipeline's sends
        (ties in enumeration order): a schedule of more chunks per stage ranks by what it costs too."""
        ranked = sorted(
            ((self.quick_bound(s), i, s) for i, s in enumerate(self.shapes(count))),
            key=lambda x: (x[0], x[1]),
        )
        return [(quick, shape) for quick, _, shape in ranked]

    # --- counts where nothing can fit ---------------------------------------------------------------------
    def cannot_fit(self, count: int) -> bool:
        """Whether no layout of this count can fit, by a lower bound on its memory: the states sharded over
        all its ranks, the fewest communicators, and the leanest activations of any of its shapes at the
        smallest micro-batch. Such a count is searched only to word its refusal, so that is left until it
        is read."""
        shapes = self.shapes(count)
        if self.peak is None or not shapes:
            return False
        splits = {(s.tp, s.cp, s.pp) for s in shapes}
        act = min(
            self.model.per_sequence_bytes(r, tp, cp, pp) for r in self.recomputes() for tp, cp, pp in splits
        )
        fixed, act = self.model.fixed_floor(count), act * (self.job.batch_size or 1)
        # One GPU's gradients may be freed while the activations peak: then the peak is the larger of the
        # states with the activations but no gradients, and the states alone (the optimizer step).
        floor = max(fixed, fixed - self.model.freed_floor(count) + act)
        return floor * (1.0 - BOUND_MARGIN) > self.room_total

    def refusal(self, count: int) -> Miss | None:
        """The miss of a count that cannot fit (cannot_fit): the global batch when no shape takes it, else a
        memory miss whose wording, from the leanest layout, is searched for only when it is read."""
        # Whether any shape takes the global batch does not depend on their order: the shapes are ranked
        # (their compute bounds worked out) only to word the batch's refusal as the search would.
        if any(self._batch_ok(shape, count, _CountResult()) for shape in self.shapes(count)):
            return LazyMemoryMiss(
                self.gpu.id, count, 1.0 / count, lambda: self.miss(count, self.search_count(count))
            )
        res = _CountResult()
        for _, shape in self._ranked(count):
            self._batch_ok(shape, count, res)
        return res.batch_miss

    def _shape_bound(self, shape: Shape) -> float:
        bound = self.shape_bounds.get(shape)
        if bound is None:  # memoised: a shape recurs at one count only, but refusal and search both rank it
            bound = self.shape_bounds[shape] = min(
                self.bound_per_item(v, r) for r in self.recomputes() for v in self.schedules(shape)
            )
        return bound

    @staticmethod
    def _simplest_threshold(res: _CountResult, cx: tuple[int, ...] | None) -> float:
        """What a bound must exceed to prune a shape of this complexity for the simplest layout's sake:
        nothing simpler than the simplest kept is pruned, one as simple only when it cannot beat it."""
        if res.simplest is None or res.simplest_cx is None or cx is None or cx < res.simplest_cx:
            return math.inf
        if cx == res.simplest_cx:
            return res.simplest.time * (1.0 + BOUND_MARGIN)
        return -math.inf

    def _shape_threshold(self, res: _CountResult, shape: Shape) -> float:
        """The pruning threshold of one shape: the k-th best time, or the simplest layout's."""
        return self._cx_threshold(res, complexity(shape.tp, shape.pp, shape.cp, shape.ep))

    @classmethod
    def _cx_threshold(cls, res: _CountResult, cx: tuple[int, ...]) -> float:
        """_shape_threshold() of a shape of complexity `cx` (the max() written out: asked per trial)."""
        kth, simplest = cls._threshold(res), cls._simplest_threshold(res, cx)
        return simplest if simplest > kth else kth

    @classmethod
    def _variant_threshold(cls, res: _CountResult, variant: tuple[Any, ...], cx: tuple[int, ...]) -> float:
        """_cx_threshold() of a trial of one variant (shape, sharding, recomputation): a kept variant is
        replaced only by a faster trial of its own (its micro-batch or schedule), so its kept time is the
        threshold then, not the k-th best."""
        kth = cls._threshold(res)
        for kept in res.found:
            if kept.variant == variant:
                kth = kept.time * (1.0 + BOUND_MARGIN)
                break
        simplest = cls._simplest_threshold(res, cx)
        return simplest if simplest > kth else kth

    @staticmethod
    def _threshold(res: _CountResult) -> float:
        """What a bound must exceed to prune: the k-th best time kept (the slowest runner-up), with a margin
        for rounding; nothing is pruned until k layouts are kept (worst is infinite until then)."""
        return res.worst * (1.0 + BOUND_MARGIN)

    def _batch_ok(self, shape: Shape, count: int, res: _CountResult) -> bool:
        job, g = self.job, self.global_batch(count)
        if g and shape.dp > g:
            res.batch_miss = res.batch_miss or Miss(
                self.gpu.id,
                count,
                "scale",
                f"a global batch of {g} sequences feeds at most {g} data-parallel ranks, not {shape.dp}",
                2.5,
            )
            return False
        if g and job.global_batch_given and g % shape.dp:
            res.batch_miss = res.batch_miss or Miss(
                self.gpu.id,
                count,
                "scale",
                f"the global batch of {g} does not split evenly over {shape.dp} data-parallel ranks",
                2.5,
            )
            return False
        if not g:
            cap = int(self.a.defaults["max_global_batch_items"].value // max(job.items_per_sequence, 1))
            if shape.dp > cap:
                limit = self.a.defaults["max_global_batch_items"].value
                res.batch_miss = res.batch_miss or Miss(
                    self.gpu.id,
                    count,
                    "scale",
                    f"{shape.dp} data-parallel ranks need a global batch of at least "
                    f"{shape.dp} samples; the default limit of {limit:,.0f} "
                    f"{job.unit.removesuffix('/s')} allows {cap} (a stated "
                    "global batch sets yours)",
                    2.5,
                )
                return False
        return True

    def _search_shape(self, shape: Shape, count: int, nodes: int, res: _CountResult) -> None:
        zeros = self.zeros(shape)
        if self.dominance and 0 in zeros and 1 in zeros:
            zeros = [z for z in zeros if z]  # ZeRO-1 moves the same bytes as DDP, reads fewer, holds less
        schedules = self.schedules(shape)
        zero1_mb: dict[int, dict[str, int]] = {s.virtual: {} for s in schedules}
        cx = complexity(shape.tp, shape.pp, shape.cp, shape.ep)
        for zero in zeros:
            sharding = SHARDING[zero] if shape.dp * shape.cp > 1 else "none"
            base = self._base(shape, count, nodes, sharding)
            hard = self._verdict(base) if self.per_base else None
            if hard is not None:
                self._refused(shape, zero, base, zero1_mb[shape.virtual], res, hard, count)
                continue
            for each in schedules:
                at = base if each is shape else self._base(each, count, nodes, sharding)
                self._search_policies(each, zero, at, zero1_mb[each.virtual], (cx, count), res)

    def _base(self, shape: Shape, count: int, nodes: int, sharding: str) -> Layout:
        """A shape's layout before its recomputation and batch."""
        return Layout(  # by position, in the order of Layout's fields (faster than by name)
            count,
            nodes,
            self.node_size,
            self.precision,
            shape.tp,
            shape.pp,
            shape.dp,
            sharding,
            "none",
            1,
            1,
            shape.cp,
            shape.ep,
            self.cfg.shard_group or 0,
            shape.virtual,
        )

    def _search_policies(
        self,
        shape: Shape,
        zero: int,
        base: Layout,
        zero1_mb: dict[str, int],
        at: tuple[tuple[int, ...], int],
        res: _CountResult,
    ) -> None:
        """The trials of one shape, schedule and sharding: each recomputation policy that fits, at each
        micro-batch, those whose bound cannot beat the threshold skipped (`at`: complexity and count)."""
        cx, count = at
        for recompute, mb_max in self._policies(shape, zero, base, zero1_mb, res):
            # The bookkeeping above runs for every policy, so the dominance rules see what the exhaustive
            # search sees; only the trials of a policy whose bound exceeds the k-th best are skipped.
            variant = (shape.tp, shape.pp, shape.cp, shape.ep, base.sharding, recompute)
            if self.prune and self._pruned(self._variant_threshold(res, variant, cx), shape, recompute):
                continue
            for mb in self.micro_batches(shape, mb_max):
                threshold = self._variant_threshold(res, variant, cx)
                if self.prune and self._trial_pruned(threshold, shape, recompute, mb):
                    continue
                self._try(base, recompute, mb, (variant, cx), count, res)

    def _trial_pruned(self, threshold: float, shape: Shape, recompute: str, mb: int) -> bool:
        """Whether one micro-batch's trial cannot beat the threshold: its pipeline's bound, then (a composed
        step) its slowest stage at this micro-batch, which prunes most trials of a large search before their
        data-parallel traffic and memory are worked out."""
        if threshold == math.inf:
            return False
        if shape.pp > 1 and self._trial_bound(shape, recompute, mb) > threshold:
            return True
        return self._stage_bound(shape, recompute, mb) > threshold

    def _stage_bound(self, shape: Shape, recompute: str, mb: int) -> float:
        """Seconds per item no trial of this micro-batch beats: its slowest stage's compute at the tables'
        rates and exposed communication, (m + (p - 1) / v) times (ComposedStep.stage_seconds), and the
        pipeline's sends (2 m v of them: what more chunks per stage cost); 0 where the step is not composed
        (memoised)."""
        key = (shape, recompute, mb)
        bound = self.stage_bounds.get(key)
        if bound is None:
            composed = self.steps.composed
            bound = 0.0
            if composed is not None:
                g = self.global_batch(shape.dp * shape.tp * shape.pp * shape.cp)
                m = self.accum(shape, mb, g)
                stage = composed.stage_seconds(
                    (
                        self.precision,
                        shape.tp,
                        shape.cp,
                        mb,
                        recompute,
                        shape.ep,
                        self.node_size,
                        shape.pp,
                        shape.virtual,
                    )
                )
                items = mb * m * shape.dp * max(self.job.items_per_sequence, 1)
                sends = 0.0
                if shape.pp > 1:
                    nodes = math.ceil(shape.dp * shape.tp * shape.pp * shape.cp / self.node_size)
                    at = (self.precision, shape.tp, shape.cp, shape.dp, mb, self.node_size, nodes > 1)
                    sends = composed.sends((*at, shape.virtual, m)).seconds
                bound = (stage * (m + (shape.pp - 1) / shape.virtual) + sends) / items
            self.stage_bounds[key] = bound
        return bound

    def _pruned(self, threshold: float, shape: Shape, recompute: str, mb: int = 0) -> bool:
        """Whether the bound of a policy (or of one micro-batch of it) exceeds the threshold; nothing exceeds
        an infinite one, so its bound is not worked out then."""
        if threshold == math.inf:
            return False
        bound = self._trial_bound(shape, recompute, mb) if mb else self.bound_per_item(shape, recompute)
        return bound > threshold

    def _refused(
        self,
        shape: Shape,
        zero: int,
        base: Layout,
        zero1_mb: dict[str, int],
        res: _CountResult,
        hard: Any,
        count: int,
    ) -> None:
        """A shape and sharding a hard rule refuses: no trial runs, but the bookkeeping does (the leanest
        layout, ZeRO-1's micro-batches for the dominance rule), and the first refused trial names the
        count's refusal.
        That is the refusal the trial-by-trial search gives whenever nothing runs at the count: with nothing
        kept, nothing is pruned, so the first trial of the first refused policy is reached."""
        if res.constraint_miss is not None and not self.keep_leanest and zero != 1:
            return  # the refusal is named: the leanest layout is not read, nor this sharding's micro-batches
        policies = self._policies(shape, zero, base, zero1_mb, res)
        if res.constraint_miss is None and any(self.micro_batches(shape, mb_max) for _, mb_max in policies):
            res.constraint_miss = self._constraint_miss(hard, count)

    def _constraint_miss(self, hard: Any, count: int) -> Miss:
        return Miss(self.gpu.id, count, "constraint", f"{hard.message} (rule {hard.rule_id})", 2.0)

    def _policies(
        self, shape: Shape, zero: int, base: Layout, zero1_mb: dict[str, int], res: _CountResult
    ) -> list[tuple[str, int]]:
        """The recomputation policies worth trying at this sharding, each with the largest micro-batch that
        fits (and the leanest layout met, for the refusal when nothing fits)."""
        room = self.room_total - self.model.fixed_bytes(base)
        out: list[tuple[str, int]] = []
        seen_mb = -1
        batch = self.job.batch_size or 1
        g = self.global_batch(base.count)
        accum = max(1, math.ceil(g / (batch * base.dp))) if g else 1  # so the refusal shows the global batch
        # A stated micro-batch that takes the whole global batch on one GPU: a stack that frees its gradients
        # after each step holds none while the activations peak (TrainingMemoryModel.freed_gradients).
        freed = self.model.freed_gradients(base.with_(grad_accum=accum)) if self.job.batch_size else 0.0
        for recompute in self._recomputes:
            per = self.model.per_sequence_bytes(recompute, shape.tp, shape.cp, shape.pp, shape.virtual)
            mb_max = int(room // per) if per > 0 else 1 << 20
            if freed and room >= 0 and per * batch <= room + freed:
                mb_max = max(mb_max, batch)
            need = self.room_total - room - freed + max(per * batch, freed)
            if res.leanest is None or need < res.leanest[0]:
                res.leanest = (need, base.with_(recompute=recompute, micro_batch=batch, grad_accum=accum))
            if mb_max < 1 or (self.dominance and mb_max == seen_mb):
                continue  # does not fit, or fits no larger micro-batch than a cheaper policy did
            seen_mb = mb_max
            if zero == 1:
                zero1_mb[recompute] = mb_max
            elif self.dominance and zero == 2 and zero1_mb.get(recompute) == mb_max:
                continue  # ZeRO-2 only adds traffic to ZeRO-1 unless it buys a larger micro-batch
            out.append((recompute, mb_max))
        return out

    def _try(
        self,
        base: Layout,
        recompute: str,
        mb: int,
        kind: tuple[tuple[Any, ...], tuple[int, ...]],
        count: int,
        res: _CountResult,
    ) -> None:
        """Run one trial and keep it if it is among the fastest, or the simplest (`kind`: its variant, one
        per shape, sharding and recomputation, and its complexity)."""
        variant, cx = kind
        g = self.global_batch(base.count)
        accum = self.accum(Shape(base.tp, base.pp, base.cp, base.ep, base.dp, base.virtual), mb, g)
        layout = Layout(
            base.count,
            base.nodes,
            base.node_size,
            base.precision,
            base.tp,
            base.pp,
            base.dp,
            base.sharding,
            recompute,
            mb,
            accum,
            base.cp,
            base.ep,
            base.shard_group,
            base.virtual,
        )
        hard = (
            None if self.per_base else self._verdict(layout)
        )  # per_base: judged with its shape and sharding
        if hard is not None:
            res.constraint_miss = res.constraint_miss or self._constraint_miss(hard, count)
            return
        per = self.model.per_sequence(recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
        step = self.steps.step(layout, per)
        if step is None:
            return
        res.evaluated += 1
        # Ranked by time per item: a layout whose batch rounds up does more work per step, not less per item.
        time = step.total_s / step.items
        self._keep_simplest(res, cx, time, layout, step, variant)
        self._keep_fastest(res, time, layout, step, variant)

    @staticmethod
    def _keep_fastest(res: _CountResult, time: float, layout: Layout, step: StepTime, variant: Any) -> None:
        """Keep the fastest layout of each (shape, sharding, recompute), the RUNNERS_UP fastest in all:
        runner-ups differ in layout, not in batch."""
        found = res.found
        for kept in found:
            if kept.variant == variant:
                if kept.time <= time:
                    return
                found.remove(kept)
                break
        else:
            if len(found) >= RUNNERS_UP and time > res.worst:
                return  # would be dropped at once (ties are kept: the order decides them)
        found.append(_Found(time, res.evaluated, layout, step, variant))
        if len(found) > RUNNERS_UP:
            found.remove(max(found))
        res.worst = max(f.time for f in found) if len(found) >= RUNNERS_UP else math.inf

    @staticmethod
    def _keep_simplest(
        res: _CountResult, cx: tuple[int, ...], time: float, layout: Layout, step: StepTime, variant: Any
    ) -> None:
        """Keep the layout if it is simpler than the simplest kept, or as simple and faster (the _Found
        compared as the list would: by time, then order, this trial's order the latest)."""
        kept, kept_cx = res.simplest, res.simplest_cx
        if kept is None or kept_cx is None or cx < kept_cx or (cx == kept_cx and time < kept.time):
            res.simplest, res.simplest_cx = _Found(time, res.evaluated, layout, step, variant), cx

    def _verdict(self, layout: Layout) -> Any:
        """The first hard plan rule the layout breaks (memoised on the facts the rules test), or None."""
        key = tuple([getter(layout) for getter in self.getters]) if self.getters is not None else None
        if key is None or key not in self.verdicts:
            facts = layout_facts(self.gpu_facts, layout, self.gpu)
            if key is None:
                key = tuple(facts[f] for f in self.tested)
                if key in self.verdicts:
                    return self.verdicts[key]
            self.verdicts[key] = first_constraint(self.constraints, facts)
        return self.verdicts[key]

    # --- results ------------------------------------------------------------------------------------------
    def candidate(self, found: _Found, *, rules: bool = True) -> Candidate:
        """A found layout with its memory breakdown and rule firings (without them when `rules` is False: a
        runner-up shows no rules unless it becomes the chosen layout, and then with_rules() adds them)."""
        memory = self.model.components(found.layout, self.usable)
        cand = Candidate(self.gpu, found.layout, memory, regime_of(self.job), step=found.step)
        if not rules:
            return cand
        return _judged(
            cand, self.gpu_facts, self.others, _needs_recompute(self.model, found.layout, self.usable)
        )

    def miss(self, count: int, res: _CountResult) -> Miss | None:
        """The real reason nothing ran at this count: memory, the global batch, or a hard rule."""
        if res.leanest is not None and res.constraint_miss is None:
            memory = self.model.components(res.leanest[1], self.usable)
            return Miss(
                self.gpu.id,
                count,
                "memory",
                f"needs {memory.central_gb:.0f} GB per GPU, has "
                f"{self.gpu.memory_gb:g} {self.gpu.memory_unit} ({self.usable:.0f} GB usable; "
                f"largest: {memory.dominant})",
                1.0 / count,
            )
        return res.constraint_miss or res.batch_miss

    def near_limit(self, res: _CountResult) -> _Found | None:
        """The leanest layout tried, timed, when nothing fits on the central estimate but it 'may not fit':
        the usable memory lies within the error measured on published peaks (their P25-P75 band), so a run
        of it may well fit (measured runs did); None when it clearly does not fit or a hard rule refused."""
        if res.leanest is None or res.constraint_miss is not None:
            return None
        layout = res.leanest[1]
        if not self.model.components(layout, self.usable).near_limit:
            return None
        per = self.model.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
        step = self.steps.step(layout, per)
        return None if step is None else _Found(step.total_s / step.items, 0, layout, step)

    def leanest_memory(self, res: _CountResult) -> tuple[Layout, Memory] | None:
        """The layout needing the least memory among those tried, with its breakdown."""
        if res.leanest is None:
            return None
        return res.leanest[1], self.model.components(res.leanest[1], self.usable)


class LazyMemoryMiss(Miss):
    """A memory miss (a count that cannot fit) whose message, the leanest layout's breakdown, is found by that
    count's full search the first time it is read: the why-not lines read only a few."""

    __slots__ = ("_message", "_resolve")
    _message: str | None
    _resolve: Callable[[], Miss | None]

    def __init__(self, gpu_id: str, count: int, rank: float, resolve: Callable[[], Miss | None]) -> None:
        fields = (("gpu_id", gpu_id), ("count", count), ("kind", "memory"), ("rank", rank))
        for name, value in (*fields, ("_message", None), ("_resolve", resolve)):
            object.__setattr__(self, name, value)

    @property
    def message(self) -> str:
        if self._message is None:
            full = self._resolve()
            assert full is not None and full.kind == "memory", "cannot_fit() let through a count that fits"
            object.__setattr__(self, "_message", full.message)
        return self._message or ""


def with_rules(ctx: Context, cand: Candidate) -> Candidate:
    """The candidate with the facts the plan rules test and the soft rules that fire on them (once)."""
    if cand.facts:
        return cand
    others = [r for r in ctx.rules_by_scope["plan"] if r.kind != "constraint"]
    model = TrainingMemoryModel(ctx.job, cand.gpu, cand.layout.precision, ctx.knowledge.assumptions)
    usable = usable_gb(cand.gpu, ctx.knowledge.assumptions, ctx.headroom)  # as the search judged it
    needed = _needs_recompute(model, cand.layout, usable)
    return _judged(cand, ctx.gpu_facts(cand.gpu, cand.layout.node_size, cand.link), others, needed)


def _needs_recompute(model: TrainingMemoryModel, layout: Layout, usable_gb: float) -> bool:
    """Whether the layout, at its micro-batch, does not fit without its recomputation (what the advice to turn
    it on claims)."""
    return layout.recompute != "none" and not model.components(layout.with_(recompute="none"), usable_gb).fits


def _judged(
    cand: Candidate, gpu_facts: dict[str, Any], others: list[Any], recompute_needed: bool
) -> Candidate:
    assert cand.step is not None
    cand.facts = plan_facts(
        gpu_facts, cand.layout, cand.memory, cand.gpu, cand.step.comm_fraction, recompute_needed, cand.step
    )
    cand.firings = evaluate(others, cand.facts)
    return cand


def _fact_getters(tested: list[str], gpu: Gpu) -> list[Callable[[Layout], Any]] | None:
    """How to read each fact the hard rules test straight off a layout (the same values layout_facts gives),
    or None when a rule tests a fact not listed here (then the facts are built in full)."""
    nvlink = gpu.nvlink_domain
    known: dict[str, Callable[[Layout], Any]] = {
        "plan.precision": attrgetter("precision"),
        "plan.count": attrgetter("count"),
        "plan.nodes": attrgetter("nodes"),
        "plan.tp": attrgetter("tp"),
        "plan.cp": attrgetter("cp"),
        "plan.ep": attrgetter("ep"),
        "plan.tp_outside_nvlink": lambda lay: lay.tp > nvlink,
        "plan.tp_across_servers": lambda lay: lay.tp > gpu.gpus_per_node,
        "plan.pp": attrgetter("pp"),
        "plan.mp_across_nodes": mp_across_nodes,
        "plan.dp": attrgetter("dp"),
        "plan.sharding": attrgetter("sharding"),
        "plan.recompute": attrgetter("recompute"),
        "plan.micro_batch": attrgetter("micro_batch"),
    }
    if any(f not in known for f in tested):
        return None
    return [known[f] for f in tested]


def search_training(
    ctx: Context, gpu: Gpu, precision: str, node_size: int, counts: list[int] | None = None
) -> tuple[list[Candidate], list[Miss]]:
    """Every count of this GPU (or the given ones) with its fastest fitting layout and runner-ups, and the
    misses with their real reasons."""
    search = TrainingSearch(ctx, gpu, precision, node_size, leanest=False)
    candidates: list[Candidate] = []
    misses: list[Miss] = []
    for count in counts if counts is not None else counts_for(node_size, ctx.constraints.max_gpus):
        if search.cannot_fit(count):
            refusal = search.refusal(count)
            if refusal is not None:
                misses.append(refusal)
            continue
        res = search.search_count(count)
        if res.found:
            ordered = with_simplest(res)
            best = search.candidate(ordered[0])
            best.alternatives = [search.candidate(f, rules=False) for f in ordered[1:]]
            candidates.append(best)
        else:
            miss = search.miss(count, res)
            if miss is not None:
                misses.append(miss)
    return candidates, misses


def with_simplest(res: _CountResult) -> list[_Found]:
    """The kept layouts, fastest first, and the simplest one last when it is not among them."""
    ordered = sorted(res.found)
    if res.simplest is not None and all(f.variant != res.simplest.variant for f in ordered):
        ordered.append(res.simplest)
    return ordered


def layout_margin(model: Any) -> float:
    """How much faster another layout must be than the simplest: the efficiency model's own error where it
    states one (the learned model: its held-out median error), else LAYOUT_MARGIN."""
    margin = getattr(model, "layout_margin", None)
    return margin if isinstance(margin, float) and 0.0 <= margin < 1.0 else LAYOUT_MARGIN


def preferred(group: list[tuple[Candidate, Interval]], margin: float = LAYOUT_MARGIN) -> int:
    """Which plan of one GPU and count to keep: the simplest layout (least model parallelism), unless another
    is predicted faster by more than the efficiency model's error (margin), so that a layout only an
    optimistic model likes does not win on a difference the model cannot resolve."""
    times = [c.predicted_s(e.p50) for c, e in group]
    fastest = min(range(len(group)), key=lambda i: times[i])
    simplest = min(range(len(group)), key=lambda i: (layout_complexity(group[i][0].layout), times[i]))
    return fastest if times[fastest] < times[simplest] * (1.0 - margin) else simplest


def exhaustive_found(
    ctx: Context, gpu: Gpu, precision: str, node_size: int, count: int, *, dominance: bool = True
) -> list[_Found]:
    """Every fitting layout of one count tried, no bound (and without the dominance rules when asked): the
    best and runner-ups, fastest first, and the simplest layout (with_simplest), that the pruned search must
    reproduce exactly."""
    search = TrainingSearch(ctx, gpu, precision, node_size, prune=False, dominance=dominance)
    return with_simplest(search.search_count(count))


def brute_force_best(ctx: Context, gpu: Gpu, precision: str, node_size: int, count: int) -> _Found | None:
    """The fastest fitting layout over every option (no bound, no dominance rule): the naive reference."""
    found = exhaustive_found(ctx, gpu, precision, node_size, count, dominance=False)
    return found[0] if found else None
