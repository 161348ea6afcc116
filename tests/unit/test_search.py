"""Unit tests of the training search (pruned = brute force), goodput, parallel memory and the bubble."""

from __future__ import annotations

import math

import pytest

from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.learned.efficiency import PriorEfficiency
from advisor.physics.goodput import daly_interval_s, goodput, goodput_fraction
from advisor.physics.memory import GB, TrainingMemoryModel
from advisor.physics.speed import training_step
from advisor.search.candidates import counts_for
from advisor.search.context import Context
from advisor.search.training import (
    TrainingSearch,
    brute_force_best,
    exhaustive_found,
    search_training,
    with_simplest,
)


def _ctx(knowledge, **w):
    job = resolve_job(knowledge, Workload(**w), need_data=False)
    return Context(knowledge, job, Constraints(), PriorEfficiency(knowledge.assumptions))


@pytest.mark.parametrize(
    "model,kind,gpu,count",
    [
        ("llama-2-7b", "finetune", "a100-80gb-sxm", 8),
        ("llama-2-7b", "pretrain", "l40s", 16),
        ("llama-2-70b", "finetune", "h100-sxm", 32),
        ("mixtral-8x7b", "pretrain", "h100-sxm", 16),
        ("mpt-125m", "pretrain", "h100-sxm", 8),
        ("llama-2-13b", "lora", "a10g", 4),
        ("bert-large", "pretrain", "v100-32gb", 8),
    ],
)
def test_pruned_search_finds_the_brute_force_best(
    knowledge, model: str, kind: str, gpu: str, count: int
) -> None:
    g = knowledge.gpu(gpu)
    precision = "bf16" if g.tflops.bf16 else "fp16"
    ctx = _ctx(knowledge, model=model, kind=kind, precision=precision)
    node = min(count, g.gpus_per_node)
    pruned = TrainingSearch(ctx, g, precision, node)
    res = pruned.search_count(count)
    exact = brute_force_best(ctx, g, pruned.precision, node, count)
    assert (exact is None) == (not res.found)
    if exact is not None:
        assert min(res.found).time == pytest.approx(exact.time, rel=1e-12)


# Dense 7B/70B/405B, MoE (Mixtral, DeepSeek-V3, Qwen3 MoE), LoRA/QLoRA, CNN, BERT, long sequences (context
# parallel), stated values; SXM, PCIe and consumer GPUs; counts from 1 to 4,096.
EXACT_CASES = [
    ({"model": "llama-2-7b", "kind": "finetune"}, "a100-80gb-sxm", (1, 8, 24, 64, 512)),
    ({"model": "llama-2-7b", "kind": "pretrain"}, "l40s", (1, 4, 16, 96, 1024)),
    ({"model": "llama-2-70b", "kind": "finetune"}, "h100-sxm", (8, 16, 48, 256, 4096)),
    ({"model": "llama-2-70b", "kind": "finetune"}, "a10g", (8, 64, 512)),
    ({"model": "llama-3.1-405b", "kind": "pretrain"}, "h100-sxm", (64, 512, 1536, 4096)),
    ({"model": "llama-3.1-405b", "kind": "pretrain"}, "mi300x", (16, 256, 2048)),
    ({"model": "mixtral-8x7b", "kind": "pretrain"}, "h100-sxm", (8, 16, 128, 1024)),
    ({"model": "mixtral-8x7b", "kind": "qlora"}, "l40s", (1, 2, 8, 64)),
    ({"model": "mixtral-8x7b", "kind": "qlora"}, "rtx-4090", (1, 4, 16)),
    ({"model": "deepseek-v3", "kind": "pretrain"}, "h100-sxm", (256, 2048, 4096)),
    ({"model": "qwen3-30b-a3b", "kind": "finetune"}, "a100-80gb-pcie", (4, 32, 256)),
    ({"model": "llama-2-13b", "kind": "lora"}, "a10g", (1, 4, 32)),
    ({"model": "llama-3.1-8b", "kind": "pretrain", "seq_len": 32768}, "h100-sxm", (8, 64, 512)),
    ({"model": "resnet50"}, "v100-32gb", (1, 8, 64, 1024)),
    ({"model": "resnet50"}, "t4", (1, 4, 32)),
    ({"model": "bert-large", "kind": "pretrain"}, "h100-pcie", (1, 16, 256)),
    ({"model": "mpt-125m", "kind": "pretrain"}, "h100-sxm", (1, 8, 4096)),
    (
        {
            "model": "llama-2-70b",
            "kind": "finetune",
            "config": {"global_batch": 64, "pp_schedule": "interleaved:2"},
        },
        "h100-sxm",
        (16, 64),
    ),
    ({"model": "llama-3.1-70b", "kind": "pretrain", "config": {"zero": 3}}, "b200", (8, 64, 1024)),
    # Interleaved 1F1B searched (Megatron-Core, torchtitan): the chunks per stage, a stated global batch's
    # micro-batches in groups of pp, a chosen one rounded up to them.
    (
        {
            "model": "llama-3.1-405b",
            "kind": "pretrain",
            "seq_len": 8192,
            "config": {"stack": "megatron", "global_batch": 512},
        },
        "h100-sxm",
        (128, 512, 1024),
    ),
    (
        {"model": "llama-3.1-70b", "kind": "pretrain", "config": {"stack": "torchtitan"}},
        "h100-sxm",
        (32, 256),
    ),
    (
        {"model": "llama-3.1-8b", "kind": "pretrain", "config": {"stack": "megatron"}},
        "a100-80gb-sxm",
        (8, 64),
    ),
]


@pytest.mark.parametrize("workload,gpu,counts", EXACT_CASES, ids=lambda v: str(v)[:40])
def test_branch_and_bound_equals_exhaustive(knowledge, workload: dict, gpu: str, counts: tuple) -> None:
    # The pruned search keeps exactly what the exhaustive one keeps: the best layout, the runner-ups (top k,
    # one per shape, sharding and recomputation, ties in the same order), the simplest layout and, when
    # nothing runs, the same reason.
    w = dict(workload)
    if "config" in w:
        w["config"] = RunConfig(**w["config"])
    g = knowledge.gpu(gpu)
    precision = "bf16" if g.tflops.bf16 else "fp16"
    ctx = _ctx(knowledge, precision=precision, **w)
    node = g.gpus_per_node
    pruned = TrainingSearch(ctx, g, precision, node)
    for count in counts:
        res = pruned.search_count(count)
        exact = exhaustive_found(ctx, g, precision, node, count)
        assert [(f.time, f.layout, f.step) for f in with_simplest(res)] == [
            (f.time, f.layout, f.step) for f in exact
        ]
        if not exact:
            reference = TrainingSearch(ctx, g, precision, node, prune=False)
            ref_res = reference.search_count(count)
            assert pruned.miss(count, res) == reference.miss(count, ref_res)
            assert pruned.leanest_memory(res) == reference.leanest_memory(ref_res)


REFUSAL_CASES = [
    ({"model": "llama-2-70b", "kind": "finetune"}, "l40s"),
    ({"model": "llama-2-70b", "kind": "finetune"}, "a10g"),
    ({"model": "llama-3.1-405b", "kind": "pretrain"}, "h100-sxm"),
    ({"model": "mixtral-8x7b", "kind": "qlora"}, "t4"),
    ({"model": "llama-2-70b", "kind": "lora", "config": {"offload": "optimizer"}}, "rtx-4090"),
    ({"model": "llama-2-70b", "kind": "finetune", "batch_size": 4}, "a100-80gb-sxm"),
    ({"model": "llama-2-7b", "kind": "finetune", "optimizer": "paged-adamw-8bit"}, "rtx-4090"),
    ({"model": "resnet50"}, "t4"),
]


@pytest.mark.parametrize("workload,gpu", REFUSAL_CASES, ids=lambda v: str(v)[:40])
def test_counts_that_cannot_fit_are_refused_as_the_full_search_refuses(
    knowledge, workload: dict, gpu: str
) -> None:
    # The memory floor only skips counts where the full search finds nothing, and the lazily worded refusal
    # reads exactly as the full search's (same kind, rank and message).
    w = dict(workload)
    if "config" in w:
        w["config"] = RunConfig(**w["config"])
    g = knowledge.gpu(gpu)
    precision = "bf16" if g.tflops.bf16 else "fp16"
    ctx = _ctx(knowledge, precision=precision, **w)
    node = g.gpus_per_node
    counts = counts_for(node, 4096)
    search = TrainingSearch(ctx, g, precision, node)
    expected, skipped = [], 0
    for count in counts:
        res = search.search_count(count)
        if search.cannot_fit(count):
            skipped += 1
            assert not res.found, f"x{count} cannot fit by the floor, yet the search found a layout"
        if not res.found and (miss := search.miss(count, res)) is not None:
            expected.append((miss.gpu_id, miss.count, miss.kind, miss.rank, miss.message))
    _, misses = search_training(ctx, g, precision, node, counts)
    assert [(m.gpu_id, m.count, m.kind, m.rank, m.message) for m in misses] == expected
    assert (
        skipped or w["model"] == "resnet50"
    )  # the floor does skip the hopeless counts (resnet50 fits on one)


def test_interleaved_bubble_closed_form(knowledge) -> None:
    ctx = _ctx(knowledge, model="gpt3-175b", kind="pretrain", precision="bf16", seq_len=2048)
    gpu, a = knowledge.gpu("h100-sxm"), knowledge.assumptions
    for v in (1, 2, 4):
        lay = Layout(
            count=64,
            nodes=8,
            node_size=8,
            precision="bf16",
            tp=8,
            pp=8,
            dp=1,
            recompute="full",
            micro_batch=1,
            grad_accum=32,
            virtual=v,
        )
        step = training_step(ctx.job, gpu, lay, ctx.fabric(gpu), a, 0.0)
        assert step is not None
        assert step.bubble_s == pytest.approx(step.roofline_s * 7 / (32 * v))  # (p - 1) / (m v)


def test_fsdp_with_tensor_parallel_memory(knowledge) -> None:
    # 2D: FSDP over 8 data-parallel ranks x TP 8 (torchtitan): weights, gradients and states each / (tp x dp).
    config = RunConfig(stack="torchtitan")
    ctx = _ctx(knowledge, model="llama-2-70b", kind="pretrain", precision="bf16", config=config)
    model = TrainingMemoryModel(ctx.job, knowledge.gpu("h100-sxm"), "bf16", knowledge.assumptions)
    lay = Layout(count=64, nodes=8, node_size=8, precision="bf16", tp=8, dp=8, sharding="zero3")
    st = model.states(lay)
    per = ctx.job.params / 64
    assert st["weights"][0] == pytest.approx(per * 2)
    assert st["gradients"][0] == pytest.approx(per * 2)
    assert st["optimizer"][0] + st["master_weights"][0] == pytest.approx(per * 12)


def test_expert_parallel_memory(knowledge) -> None:
    # Mixtral: experts split over EP, attention and embeddings replicated; all experts are in memory.
    ctx = _ctx(knowledge, model="mixtral-8x7b", kind="pretrain", precision="bf16")
    arch = ctx.job.arch
    assert arch is not None and arch.is_moe
    experts = arch.expert_params
    assert experts == pytest.approx(32 * 8 * 3 * 4096 * 14336)
    model = TrainingMemoryModel(ctx.job, knowledge.gpu("h100-sxm"), "bf16", knowledge.assumptions)
    lay = Layout(count=8, nodes=1, node_size=8, precision="bf16", dp=8, ep=8, sharding="ddp")
    weights = model.states(lay)["weights"][0]
    assert weights == pytest.approx(((ctx.job.params - experts) + experts / 8) * 2)


def test_young_daly_goodput() -> None:
    # Daly 2006 (FGCS 22(3), eq. 37), checked on the paper's own Figs. 3-5 (delta = 5 min):
    # M = 24 h -> tau_opt 117 min, M = 6 h -> 57 min, M = 15 min -> 9.1 min.
    assert daly_interval_s(300.0, 24 * 3600.0) / 60 == pytest.approx(117, abs=0.5)
    assert daly_interval_s(300.0, 6 * 3600.0) / 60 == pytest.approx(57, abs=0.5)
    assert daly_interval_s(300.0, 15 * 60.0) / 60 == pytest.approx(9.1, abs=0.05)
    # The first-order sqrt(2 delta M) - delta is below it (7.2 min for the last case).
    assert daly_interval_s(300.0, 900.0) > math.sqrt(2 * 300 * 900) - 300 + 60
    # The cut-off is delta = 2M, not M/2: delta = 30000 s, M = 36000 s still takes the series.
    xi = 30000 / 72000
    series = math.sqrt(2 * 30000 * 36000) * (1 + math.sqrt(xi) / 3 + xi / 9) - 30000
    assert daly_interval_s(30000.0, 36000.0) == pytest.approx(series)
    assert daly_interval_s(30000.0, 36000.0) < 36000.0
    assert daly_interval_s(72000.0, 36000.0) == 36000.0  # delta >= 2M: checkpoint once per failure
    tau = daly_interval_s(60.0, 36000.0)
    waste = 60 / (tau + 60) + ((tau + 60) / 2 + 900) / 36000
    assert goodput_fraction(60.0, tau, 900.0, 36000.0) == pytest.approx(1 - waste)


def test_goodput_falls_with_scale(knowledge) -> None:
    job = resolve_job(knowledge, Workload(model="llama-3.1-405b", kind="pretrain"), need_data=False)
    small, large = goodput(job, 1024, knowledge.assumptions), goodput(job, 16384, knowledge.assumptions)
    assert large.mtbf_h == pytest.approx(1 / (1.973e-5 * 16384))  # Llama 3: about 3 h between interruptions
    assert 0.85 < large.fraction < small.fraction < 1.0


def test_hf_loss_is_larger_than_megatron(knowledge) -> None:
    gpu, a = knowledge.gpu("h100-sxm"), knowledge.assumptions
    per = {}
    for stack in ("hf", "megatron", "unsloth"):
        job = resolve_job(
            knowledge,
            Workload(model="llama-3.1-8b", kind="finetune", seq_len=8192, config=RunConfig(stack=stack)),
            need_data=False,
        )
        per[stack] = TrainingMemoryModel(job, gpu, "bf16", a).loss_per_seq / GB
    assert per["hf"] == pytest.approx(12 * 8192 * 128256 / GB)
    assert per["unsloth"] < per["megatron"] < per["hf"]


@pytest.mark.parametrize(
    "model,kind,gpu,count",
    [
        ("mixtral-8x7b", "pretrain", "h200", 48),
        ("mixtral-8x7b", "pretrain", "a100-80gb-sxm", 64),
        ("llama-2-70b", "finetune", "mi300x", 64),
    ],
)
def test_a_repicked_plan_is_judged_with_the_memory_the_search_used(
    knowledge, model, kind, gpu, count
) -> None:
    """with_rules (a plan the efficiency model re-picks) judges "recomputation needed" on the usable memory
    the search fitted it in: these cases fit without recomputation on the card's nominal GB, not on what
    CUDA hands out, so the nominal figure said "not needed" of a plan the search had to recompute (the
    FSDP stack held: typed, a mixture of experts pre-trains on Megatron, whose expert parallelism fits
    without recomputation)."""
    import dataclasses

    from advisor.search.training import with_rules

    g = knowledge.gpu(gpu)
    stack = RunConfig(stack="fsdp") if kind == "pretrain" else RunConfig()
    ctx = _ctx(knowledge, model=model, kind=kind, precision="bf16", config=stack)
    cands, _ = search_training(ctx, g, "bf16", g.gpus_per_node, [count])
    judged = [c for c in cands if c.facts and c.layout.recompute != "none"]
    assert judged
    for cand in judged:
        fresh = dataclasses.replace(cand, facts={}, firings=[])
        assert with_rules(ctx, fresh).facts["plan.recompute_needed"] == cand.facts["plan.recompute_needed"]
