"""Provides the output side of a configuration: each value marked given or chosen, layouts and memory as
output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.answer.plan_out import AlternativeOut, ConfigValue, GoodputOut, LayoutOut, MemoryOut
from advisor.job.layout import ZERO_STAGE, Layout
from advisor.job.resolve import Job
from advisor.physics.goodput import Goodput
from advisor.physics.memory import Memory
from advisor.question.vocab import DEFAULT_ENGINE

if TYPE_CHECKING:
    from collections.abc import Collection

    from advisor.learned.efficiency.base import Interval
    from advisor.search.candidates import Candidate

ZERO_OF = {"none": 0, "ddp": 0, **ZERO_STAGE}


def layout_out(lay: Layout) -> LayoutOut:
    """A layout as output."""
    return LayoutOut(
        tp=lay.tp,
        pp=lay.pp,
        dp=lay.dp,
        sharding=lay.sharding,
        recompute=lay.recompute,
        micro_batch=lay.micro_batch,
        grad_accum=lay.grad_accum,
        cp=lay.cp,
        ep=lay.ep,
        shard_group=lay.shard_group,
        virtual=lay.virtual,
    )


def alternative_out(
    cand: Candidate, eff: Interval, chosen_step_s: float, chosen_items: float = 0.0
) -> AlternativeOut:
    """A runner-up layout with its P50 step time, and how much slower it is than the chosen one's per item
    (`chosen_items` per step: a layout whose micro-batches round the global batch up does more per step;
    0 compares the steps)."""
    assert cand.step is not None
    t = cand.step.total_s / eff.p50
    per = cand.step.items / chosen_items if chosen_items and cand.step.items else 1.0
    return AlternativeOut(
        parallelism=cand.layout.label(),
        layout=layout_out(cand.layout),
        memory_per_gpu_gb=round(cand.memory.central_gb, 2),
        step_time_s=t,
        slower=round(t / (chosen_step_s * per), 3) if chosen_step_s else 1.0,
    )


def memory_out(mem: Memory) -> MemoryOut:
    """A memory breakdown as output."""
    return MemoryOut(
        per_gpu_gb=round(mem.central_gb, 2),
        per_gpu_gb_low=round(mem.low_gb, 2),
        per_gpu_gb_high=round(mem.high_gb, 2),
        capacity_gb=round(mem.capacity_gb, 1),
        usable_gb=round(mem.usable_gb, 2),
        fits=mem.fits,
        verdict=mem.verdict,
        dominant=mem.dominant,
        breakdown=mem.as_dict(),
        host_gb=round(mem.host_gb, 2),
    )


def goodput_out(g: Goodput) -> GoodputOut:
    """Goodput as output."""
    return GoodputOut(
        fraction=round(g.fraction, 4),
        mtbf_h=round(g.mtbf_h, 2),
        checkpoint_s=round(g.checkpoint_s, 1),
        checkpoint_interval_h=round(g.interval_h, 3),
        restart_h=g.restart_h,
        interruptions=round(g.interruptions, 2),
    )


def configuration(job: Job, lay: Layout) -> dict[str, ConfigValue]:
    """Every configuration value of a training plan, marked given (the user's) or chosen (the search's)."""
    c = job.config
    given = c.given()
    values: dict[str, Any] = {
        "tp": lay.tp,
        "pp": lay.pp,
        "cp": lay.cp,
        "ep": lay.ep,
        "dp": lay.dp,
        "zero": ZERO_OF[lay.sharding],
        "recompute": lay.recompute,
        "micro_batch": lay.micro_batch,
        "grad_accum": lay.grad_accum,
        "global_batch": lay.micro_batch * lay.grad_accum * lay.dp,
        "pp_schedule": "1f1b" if lay.virtual == 1 else f"interleaved:{lay.virtual}",
        "optimizer": job.optimizer,
        "master_weights": job.master_weights,
        "offload": job.offload,
        "stack": job.stack,
    }
    values.update(_optional_values(job, lay, given))
    out = {}
    for key, value in values.items():
        if key in ("micro_batch", "global_batch"):
            source = _batch_source(job, key)
        elif key in ("optimizer", "lora_rank"):
            source = "given" if key in job.given_workload else "default"
        elif key == "grad_accum" or (
            key == "pp_schedule" and key not in given and _schedule_searched(job, lay)
        ):
            source = "chosen"
        else:
            source = "given" if key in given else ("default" if key in _DEFAULTED else "chosen")
        out[key] = ConfigValue(value=value, source=source)
    out.update(_named_stack(job, out))
    if c.zero is not None and ZERO_OF[lay.sharding] != c.zero:
        # The user's stage, as given: on one data-parallel rank (dp x cp = 1) there is nothing to shard over,
        # so the layout runs it as plain data parallel.
        out["zero"] = ConfigValue(
            value=c.zero, source="given", note=f"dp {lay.dp * lay.cp}: nothing to shard, as without ZeRO"
        )
    return out


def _optional_values(job: Job, lay: Layout, given: Collection[str]) -> dict[str, Any]:
    """The configuration values a plan shows only where they apply: hybrid sharding's group, the recompute
    modules, a fused loss, the MoE dispatcher, LoRA's rank and targets."""
    c = job.config
    values: dict[str, Any] = {}
    if lay.shard_group:
        values["shard_group"] = lay.shard_group
    if c.recompute_modules and lay.recompute == "selective":
        values["recompute_modules"] = ",".join(c.recompute_modules)
    if job.fused_loss != "off":
        values["fused_loss"] = job.fused_loss
    if lay.ep > 1 or "moe_dispatcher" in given:
        values["moe_dispatcher"] = job.moe_dispatcher
    if job.kind in ("lora", "qlora"):
        values["lora_rank"] = job.lora_rank
        values["lora_targets"] = job.lora_targets
    return values


def _named_stack(job: Job, out: dict[str, ConfigValue]) -> dict[str, ConfigValue]:
    """The stack value with what it was answered as, where the user named a stack of the measured runs."""
    named, value = job.config.stack_named, out.get("stack")
    if named is None or value is None:
        return {}
    return {"stack": ConfigValue(value=value.value, source=value.source, note=answered_as(named, job.stack))}


def answered_as(named: str, stack: str) -> str:
    """'stack pytorch is answered as fsdp (...)': a stack of the measured runs only, named by the user, and
    the traits where the two differ (knowledge/training_stacks.toml `runs_as`)."""
    from advisor.catalog.stacks import shipped_stacks
    from advisor.learned.efficiency.learned import TRAIT_WORDS

    stacks = shipped_stacks()
    head = f"stack {named} is answered as {stack}"
    if named not in stacks or stack not in stacks:
        return head
    own, used = stacks[named].traits(), stacks[stack].traits()
    differ = [(i, words) for i, words in enumerate(TRAIT_WORDS) if own[i] != used[i]]
    if not differ:
        return f"{head}: its runs' traits are {stack}'s"
    theirs = " and ".join(yes if own[i] else no for i, (yes, no) in differ)
    ours = " and ".join(yes if used[i] else no for i, (yes, no) in differ)
    return f"{head}: its runs' traits {theirs}, {stack}'s {ours}"


def _batch_source(job: Job, key: str) -> str:
    """Where a plan's micro- or global batch came from: the user's, the search's, or (an LLM's global batch
    not given) the sourced default the search rounds (job/data.py)."""
    if key == "micro_batch":
        return "given" if job.batch_size else "chosen"
    return "given" if job.global_batch_given else ("default" if job.global_batch_seqs else "chosen")


def serving_configuration(job: Job, lay: Layout) -> dict[str, ConfigValue]:
    """The configuration of a serving plan: tensor and pipeline size, replicas, engine."""
    given = {**job.config.given(), **({"batch": job.batch_size} if job.batch_size else {})}
    out = {
        k: ConfigValue(value=v, source="given" if k in given else "chosen")
        for k, v in (("tp", lay.tp), ("pp", lay.pp), ("replicas", lay.dp), ("batch", lay.micro_batch))
    }
    out["engine"] = ConfigValue(
        value=job.config.engine or DEFAULT_ENGINE, source="given" if job.config.engine else "default"
    )
    return out


def _schedule_searched(job: Job, lay: Layout) -> bool:
    """Whether the search chose the pipeline schedule: a pipeline on a stack that runs interleaved 1F1B."""
    from advisor.catalog.stacks import shipped_stacks

    stack = shipped_stacks().get(job.stack)
    return lay.pp > 1 and stack is not None and stack.interleaved


_DEFAULTED = ("pp_schedule", "master_weights", "offload", "stack", "lora_targets", "moe_dispatcher")
