"""The pipeline schedule searched where the user states none (interleaved 1F1B on Megatron-Core and
torchtitan), its memory, its layer split and the micro-batches it allows."""

from __future__ import annotations

import math

import pytest

from advisor.catalog.stacks import shipped_stacks
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.job.resolve import resolve_job
from advisor.learned.efficiency import PriorEfficiency
from advisor.physics.memory import TrainingMemoryModel
from advisor.physics.step_ops import BUBBLE, chunk_sizes
from advisor.search.context import Context
from advisor.search.training import TrainingSearch


def _search(knowledge, model: str, gpu: str, stack: str | None, **config) -> TrainingSearch:
    cfg = RunConfig(stack=stack, **config) if stack else RunConfig(**config)
    job = resolve_job(
        knowledge, Workload(model=model, kind="pretrain", seq_len=8192, config=cfg), need_data=False
    )
    ctx = Context(knowledge, job, Constraints(), PriorEfficiency(knowledge.assumptions))
    g = knowledge.gpu(gpu)
    return TrainingSearch(ctx, g, "bf16", g.gpus_per_node)


def test_the_stacks_that_run_interleaved_1f1b() -> None:
    stacks = shipped_stacks()
    assert {k for k, s in stacks.items() if s.interleaved} == {"megatron", "torchtitan"}


def test_the_chunks_per_stage_the_search_tries(knowledge) -> None:
    # Llama 3 70B: 80 layers. PP4: 20 a stage, so v divides 20 (NeMo's llama3_70b recipe runs PP4 VP5).
    s70 = _search(knowledge, "llama-3.1-70b", "h100-sxm", "megatron")
    assert s70.virtuals(4) == (1, 2, 4, 5, 10, 20)
    assert s70.virtuals(1) == (1,)
    # Llama 3.1 405B: 126 layers, which split over 8 stages only with the embedding and the loss counted as a
    # layer each (128 = 8 x 16): Megatron Bridge's PP8 VP8 is among them.
    s405 = _search(knowledge, "llama-3.1-405b", "h100-sxm", "torchtitan")
    assert s405.virtuals(8) == (1, 2, 4, 8, 16)
    # A stack without an interleaved schedule, and a stated schedule, are held.
    assert _search(knowledge, "llama-3.1-70b", "h100-sxm", "fsdp").virtuals(4) == (1,)
    stated = _search(knowledge, "llama-3.1-70b", "h100-sxm", "megatron", pp_schedule="interleaved:2")
    assert stated.virtuals(4) == (2,)
    assert _search(knowledge, "llama-3.1-70b", "h100-sxm", "megatron", pp_schedule="1f1b").virtuals(4) == (1,)


def test_megatron_splits_the_layers_with_the_embedding_and_the_loss() -> None:
    # 126 layers in 64 chunks: 128 slots, the first and last chunk one layer fewer (they hold the embedding
    # and the loss); 80 layers in 8 chunks: evenly; 61 in 16: the first chunks a layer larger.
    sizes = chunk_sizes(126, 64)
    assert sum(sizes) == 126 and sizes[0] == sizes[-1] == 1 and set(sizes[1:-1]) == {2}
    assert chunk_sizes(80, 8) == [10] * 8
    assert chunk_sizes(61, 16) == [4] * 13 + [3] * 3
    assert chunk_sizes(126, 128) == [0, *([1] * 126), 0]


def test_interleaving_holds_more_activations_on_the_first_stage(knowledge) -> None:
    # Megatron keeps 1 + (p - 1) / (p v) times the first stage's activations in flight (Korthikanti et al.
    # 2022, sec. 4.2.3): the extra over 1F1B falls as 1 / v.
    job = resolve_job(
        knowledge,
        Workload(model="llama-3.1-70b", kind="pretrain", seq_len=8192, config=RunConfig(stack="megatron")),
        need_data=False,
    )
    model = TrainingMemoryModel(job, knowledge.gpu("h100-sxm"), "bf16", knowledge.assumptions)
    plain = model.per_sequence("none", 4, 1, 4)
    two, five = (model.per_sequence("none", 4, 1, 4, v) for v in (2, 5))
    assert plain < five < two
    assert (two - plain) / (five - plain) == pytest.approx(5 / 2, rel=1e-9)
    # Without a pipeline there is no schedule to interleave.
    assert model.per_sequence("none", 4, 1, 1, 4) == model.per_sequence("none", 4, 1, 1)


def test_a_large_megatron_pretraining_runs_interleaved(knowledge) -> None:
    # Llama 3.1 405B on 1,024 H100, global batch 512 of 8,192 tokens, Megatron-Core: PP8 runs 32 micro-batches
    # a step, and plain 1F1B idles 7 of 39 stage times (18%); the search interleaves the stages, as Megatron
    # Bridge's recipe for this run does (TP8 PP8 VP8), and the bubble falls below 5% of the step.
    from advisor.answer.predict import predict

    w = Workload(
        model="llama-3.1-405b",
        kind="pretrain",
        seq_len=8192,
        config=RunConfig(stack="megatron", global_batch=512),
    )
    out = predict(knowledge, w, "h100-sxm", 1024)
    assert out.layout is not None and out.layout.pp > 1
    assert out.layout.virtual > 1
    assert out.configuration["pp_schedule"].value == f"interleaved:{out.layout.virtual}"
    assert out.configuration["pp_schedule"].source == "chosen"
    assert out.step_breakdown is not None
    bubble = sum(p.seconds for p in out.step_breakdown.parts if p.op == BUBBLE)
    assert bubble < 0.05 * out.step_breakdown.composed_s
    # Stated plain 1F1B is held, and its bubble is what interleaving removes.
    plain = predict(
        knowledge,
        Workload(
            model="llama-3.1-405b",
            kind="pretrain",
            seq_len=8192,
            config=RunConfig(stack="megatron", global_batch=512, pp_schedule="1f1b"),
        ),
        "h100-sxm",
        1024,
    )
    assert plain.layout is not None and plain.layout.virtual == 1
    assert plain.configuration["pp_schedule"].source == "given"
    assert plain.throughput is not None and out.throughput is not None
    assert out.throughput.value > plain.throughput.value


def test_interleaved_micro_batches_come_in_groups_of_pp(knowledge) -> None:
    # A stated global batch keeps only the micro-batches whose count per step divides by pp; a global batch
    # the tool chooses is rounded up to a multiple of pp instead.
    stated = _search(knowledge, "llama-2-70b", "h100-sxm", "megatron", global_batch=44)
    shape = next(
        v for s in stated.shapes(32) for v in stated.schedules(s) if (v.tp, v.pp, v.virtual) == (8, 4, 2)
    )
    assert shape.dp == 1
    options = stated.micro_batches(shape, 8)
    assert options and all(math.ceil(44 / mb) % 4 == 0 for mb in options)
    assert 2 not in options  # 22 micro-batches do not divide into groups of 4
    plain = next(s for s in stated.shapes(32) if (s.tp, s.pp) == (8, 4))
    assert plain.virtual == 1
    assert 2 in stated.micro_batches(plain, 8)
    chosen = _search(knowledge, "llama-3.1-70b", "h100-sxm", "megatron")
    shape = next(
        v for s in chosen.shapes(256) for v in chosen.schedules(s) if (v.tp, v.pp, v.virtual) == (4, 4, 5)
    )
    g = chosen.global_batch(256)
    for mb in (1, 2, 3):
        m = chosen.accum(shape, mb, g)
        assert m % 4 == 0 and m >= math.ceil(g / (mb * shape.dp))


def test_a_typical_fsdp_pretraining_keeps_plain_1f1b(knowledge) -> None:
    search = _search(knowledge, "llama-3.1-70b", "h100-sxm", None)
    assert search.stack.id == "fsdp"
    assert all(v.virtual == 1 for s in search.shapes(256) for v in search.schedules(s))
