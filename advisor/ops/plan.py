"""Provides a chosen plan's operations plan: scaling, power, queues, monitoring, fault tolerance, hybrid."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.loader import Knowledge
from advisor.catalog.tco import Operations, TcoFigures, load_tco
from advisor.job.inputs import Constraints
from advisor.job.resolve import Job
from advisor.ops.plan_facts import PlanFacts
from advisor.physics.goodput import daly_interval_s, goodput


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class OpsItem:
    """One setting, why it was chosen, and where the rule comes from."""

    name: str
    setting: str
    reason: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class PowerEffect:
    """What a power cap does to this plan's energy and time."""

    cap_w: float
    energy_kwh: float
    energy_kwh_capped: float
    hours_p50: float
    hours_p50_capped: float


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class OpsPlan:
    """The operations plan, item by item."""

    scaling: tuple[OpsItem, ...]
    power: tuple[OpsItem, ...]
    power_effect: PowerEffect | None = None
    queue: tuple[OpsItem, ...]
    monitoring: tuple[OpsItem, ...]
    fault_tolerance: tuple[OpsItem, ...]
    hybrid: tuple[OpsItem, ...]

    def items(self) -> list[tuple[str, OpsItem]]:
        """Every item with its section name."""
        return [
            (section, item)
            for section in ("scaling", "power", "queue", "monitoring", "fault_tolerance", "hybrid")
            for item in getattr(self, section)
        ]


def checkpoint_interval_h(
    knowledge: Knowledge, job: Job, plan: PlanFacts, constraints: Constraints
) -> tuple[float, float, float]:
    """Daly's optimum checkpoint interval and the job's mean time between interruptions, in hours, and one
    checkpoint's write, in seconds: the plan's goodput (advisor/physics/goodput.py, the one interruption rate
    of an answer: knowledge/assumptions.toml [goodput]), with the spot preemptions of its instances added on a
    spot plan."""
    a = knowledge.assumptions
    good = goodput(job, plan.count, a)
    if constraints.pricing != "spot":
        return good.interval_h, good.mtbf_h, good.checkpoint_s
    instances = plan.instances or plan.nodes
    spot = instances * a.cost["spot_interruptions_per_month"].value / a.cost["hours_per_month"].value
    mtbi = 1.0 / (1.0 / good.mtbf_h + spot)
    return daly_interval_s(good.checkpoint_s, mtbi * 3600.0) / 3600.0, mtbi, good.checkpoint_s


FLEET = "gpu-advisor fleet plan PORTFOLIO.toml"


def _max_gpus(op: Operations, job: Job, plan: PlanFacts) -> OpsItem:
    """A training job restarts rather than resizes: it has no elastic reserve of its own; a service grows
    by whole replicas, the guide's 20% rounded up to at least one more."""
    reserve = op["elastic_reserve_fraction"].value
    if job.training:
        return OpsItem(
            name="max GPUs",
            setting=str(plan.count),
            reason="a training job keeps its size to the end (it restarts to change it): no elastic "
            f"reserve on the job; the guide's {reserve:.0%} elastic pool is cluster policy, sized by "
            f"`{FLEET}`",
            source=op["elastic_reserve_fraction"].source,
        )
    per = plan.gpus_per_replica or 1
    top = max(plan.count + per, math.ceil(plan.count * (1 + reserve) / per) * per)
    return OpsItem(
        name="max GPUs",
        setting=str(top),
        reason=f"the plan's {plan.count} plus the guide's {reserve:.0%} elastic reserve, in whole "
        f"replicas of {per} (at least one more, so a failed replica does not stop the service)",
        source=op["elastic_reserve_fraction"].source,
    )


def _scaling(
    knowledge: Knowledge, job: Job, constraints: Constraints, plan: PlanFacts
) -> tuple[OpsItem, ...]:
    """Scaling items that are true of this job: a training job neither scales out nor has a night window."""
    op = load_tco(knowledge).operations
    if job.training:
        low, why_low = (
            plan.count,
            "a data-parallel training job restarts, rather than resizes, to change its size",
        )
    else:
        assert plan.replicas is not None and plan.gpus_per_replica is not None
        low, why_low = plan.gpus_per_replica, "one replica stays up to keep the service answering"
    budget_rule = (
        f"scale in when the month's spend runs above ${constraints.budget_usd:,.0f}"
        if constraints.budget_usd and constraints.budget_period == "month"
        else "release every GPU when the job ends"
        if job.training
        else f"scale in an instance whose cost passes ${op['scale_in_instance_cost_usd'].value:,.0f} "
        "(the guide's rule; set your own)"
    )
    items = [
        OpsItem(name="min GPUs", setting=str(low), reason=why_low, source="design"),
        _max_gpus(op, job, plan),
        OpsItem(
            name="scale in",
            setting=budget_rule,
            reason="cost, not load, decides when to give capacity back",
            source=op["scale_in_instance_cost_usd"].source,
        ),
    ]
    if not job.training:
        items.insert(
            2,
            OpsItem(
                name="scale out",
                setting=f"GPU utilisation > {op['scale_out_utilization'].value:.0%}",
                reason="the guide's trigger: add replicas before requests queue",
                source=op["scale_out_utilization"].source,
            ),
        )
        items.append(
            OpsItem(
                name="reclaim window",
                setting=f"{op['reclaim_start_hour'].value:02.0f}:00-"
                f"{op['reclaim_end_hour'].value:02.0f}:00 daily",
                reason="release the replicas the night's lower load does not need",
                source=op["reclaim_start_hour"].source,
            )
        )
    return tuple(items)


def _queues(op: Operations, job: Job) -> tuple[OpsItem, ...]:
    """Training: the guide's four queues and which this kind of job belongs in. Serving: it is not queued."""
    if not job.training:
        return (
            OpsItem(
                name="serving",
                setting="always on, ahead of the training queues",
                reason=f"replicas follow the request rate (scale out/in above); `{FLEET}` simulates them "
                "beside a cluster's training queues",
                source=op["queue_levels"].source,
            ),
        )
    return (
        OpsItem(
            name="urgent",
            setting="preempts lower levels",
            reason="deadline-bound training",
            source=op["queue_levels"].source,
        ),
        OpsItem(
            name="regular",
            setting="first in, first out",
            reason="ordinary training",
            source=op["queue_levels"].source,
        ),
        OpsItem(
            name="batch inference",
            setting="idle capacity only",
            reason="soaks up idle GPUs between training jobs",
            source=op["queue_levels"].source,
        ),
        OpsItem(
            name="development",
            setting="capped per team",
            reason="keeps experiments from starving production",
            source=op["queue_levels"].source,
        ),
    )


def operations_plan(knowledge: Knowledge, job: Job, constraints: Constraints, plan: PlanFacts) -> OpsPlan:
    """The operations plan for one plan, every item with its reason and source."""
    t = load_tco(knowledge)
    gpu = knowledge.gpu(plan.gpu)
    return OpsPlan(
        scaling=_scaling(knowledge, job, constraints, plan),
        power=_power_items(t, job, plan, gpu.tdp_w or 0),
        power_effect=_power_effect(t, job, plan, gpu.tdp_w or 0),
        queue=_queues(t.operations, job),
        monitoring=_monitoring(t.operations),
        fault_tolerance=_fault_tolerance(knowledge, job, constraints, plan),
        hybrid=_hybrid(t.operations),
    )


def _power_items(t: TcoFigures, job: Job, plan: PlanFacts, tdp: int) -> tuple[OpsItem, ...]:
    """The power caps that apply to this job: its own kind's cap, and the night cap only when it runs past
    the night window."""
    pc = t.power_cap
    cap_w = round(tdp * pc["cap_fraction"].value)
    guide_train = pc["guide_training_cap_w"].value
    power: tuple[OpsItem, ...] = (
        OpsItem(
            name="training cap",
            setting=f"none (performance), or {cap_w} W ({pc['cap_fraction'].value:.0%} of "
            f"{tdp} W TDP) when energy matters more than time",
            reason=f"measured: capping at {pc['cap_fraction'].value:.0%} of TDP "
            f"saved {pc['energy_saving_fraction'].value:.1%} energy "
            f"for {pc['slowdown_fraction'].value:.1%} longer training"
            + (
                f"; the guide's {guide_train:.0f} W example is above this GPU's {tdp} W TDP"
                if guide_train >= tdp
                else ""
            ),
            source=pc["energy_saving_fraction"].source,
        ),
        OpsItem(
            name="inference cap",
            setting=f"{min(pc['guide_inference_cap_w'].value, tdp):.0f} W",
            reason="decode is memory-bandwidth bound and loses little to a lower clock (the guide's 300 W "
            "efficiency mode)",
            source=pc["guide_inference_cap_w"].source,
        ),
        OpsItem(
            name="off-peak",
            setting=f"{pc['guide_night_cap_fraction'].value:.0%} cap "
            f"{pc['guide_night_start_hour'].value:02.0f}:00-{pc['guide_night_end_hour'].value:02.0f}:00",
            reason="run batch work at night under a lighter cap when tariffs are lower",
            source=pc["guide_night_cap_fraction"].source,
        ),
    )
    # Each job gets the cap for its own kind only; a training job shorter than the night window has none.
    night = (pc["guide_night_end_hour"].value - pc["guide_night_start_hour"].value) % 24
    return tuple(
        i
        for i in power
        if i.name != ("inference cap" if job.training else "training cap")
        and not (i.name == "off-peak" and job.training and plan.hours_p50 < night)
    )


def _power_effect(t: TcoFigures, job: Job, plan: PlanFacts, tdp: int) -> PowerEffect | None:
    """Energy and time of a training job with and without the measured cap."""
    if not (job.training and tdp):
        return None
    pc = t.power_cap
    overhead = t.power["server_overhead_w_per_gpu"].value
    kwh = plan.count * (tdp + overhead) * plan.hours_p50 / 1000.0 * t.power["pue"].value
    return PowerEffect(
        cap_w=round(tdp * pc["cap_fraction"].value),
        energy_kwh=round(kwh, 1),
        energy_kwh_capped=round(kwh * (1 - pc["energy_saving_fraction"].value), 1),
        hours_p50=round(plan.hours_p50, 3),
        hours_p50_capped=round(plan.hours_p50 * (1 + pc["slowdown_fraction"].value), 3),
    )


def _monitoring(op: Operations) -> tuple[OpsItem, ...]:
    """The guide's KPIs to watch, each with its target."""
    return (
        OpsItem(
            name="utilisation",
            setting=f">= {op['target_utilization'].value:.0%}",
            reason="owned or reserved GPUs below this cost more than renting",
            source=op["target_utilization"].source,
        ),
        OpsItem(
            name="queue wait",
            setting=f"< {op['max_queue_wait_min'].value:.0f} min",
            reason="longer waits mean the pool is too small",
            source=op["max_queue_wait_min"].source,
        ),
        OpsItem(
            name="hardware failures",
            setting=f"< {op['hardware_failure_target_per_month'].value:.1%} of GPUs a month",
            reason=f"measured at scale: {op['hardware_failure_rate_per_month'].value:.2%} of H100s "
            "interrupted a job per month (Llama 3); above the target, drain and test",
            source=op["hardware_failure_target_per_month"].source,
        ),
        OpsItem(
            name="idle",
            setting=f"<= {op['idle_max_fraction'].value:.0%}",
            reason="idle capacity is the first cost overrun",
            source=op["idle_max_fraction"].source,
        ),
    )


def _fault_tolerance(
    knowledge: Knowledge, job: Job, constraints: Constraints, plan: PlanFacts
) -> tuple[OpsItem, ...]:
    """Restart policy and the checkpoint interval, never longer than the job itself."""
    op = load_tco(knowledge).operations
    interval, mtbi, write_s = checkpoint_interval_h(knowledge, job, plan, constraints)
    if job.training and plan.step_s_p50 is not None and interval >= plan.hours_p50:
        ckpt = (
            f"at the end only: the job (P50 {plan.hours_p50 * 60:.0f} min) "
            "is shorter than the optimum interval"
        )
    elif job.training and plan.step_s_p50 is not None:
        steps = max(1, round(interval * 3600 / plan.step_s_p50))
        ckpt = f"every {steps} steps (~{interval * 60:.0f} min)"
    else:
        ckpt = "not applicable (stateless serving)"
    return (
        OpsItem(
            name="restart policy",
            setting=f"stop after {op['restart_limit'].value:.0f} failures",
            reason="restart on failure, but give up on a job that keeps failing: Kubeflow backoffLimit, "
            "torchrun --max-restarts",
            source=op["restart_limit"].source,
        ),
        OpsItem(
            name="checkpoint interval",
            setting=ckpt,
            reason=f"Daly's optimum for a {write_s:,.0f} s write (the plan's weights and optimizer states "
            f"at the sourced storage bandwidth) and one interruption every {mtbi:,.0f} h "
            f"({plan.count} GPU{'s' if plan.count != 1 else ''} at Llama 3's measured interruption rate"
            + (", plus spot preemptions" if constraints.pricing == "spot" else "")
            + "): the plan's goodput figures",
            source="daly-2006",
        ),
    )


def _hybrid(op: Operations) -> tuple[OpsItem, ...]:
    """Cluster-level policy belongs to the fleet planner: one pointer to it."""
    share = op["hybrid_train_share"].value
    return (
        OpsItem(
            name="cluster policy",
            setting=f"`{FLEET}`",
            reason=f"the guide's {share / (1 - share):.0f}:1 training:inference split, "
            f"{op['elastic_reserve_fraction'].value:.0%} elastic pool and four queues are properties of a "
            "cluster, not of one job: the fleet planner sizes and simulates them for a whole portfolio",
            source=op["hybrid_train_share"].source,
        ),
    )
