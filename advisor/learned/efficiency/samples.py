"""Provides Sample: one measured run rebuilt as the core models it, as features, speed of light and the
measured efficiency (what the efficiency model is trained and evaluated on; never read by a command that
answers a question, so its record type is declared only where the model is fitted)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.assumptions import Fabric
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.stacks import stack_of
from advisor.job.defaults import measured_batch
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.learned.efficiency.base import regime_of
from advisor.learned.efficiency.features import FEATURES, KIND_CODE, Traits, feature_vector
from advisor.learned.efficiency.runs import Run, stated_attention
from advisor.physics.memory import TrainingMemoryModel, usable_gb
from advisor.physics.speed import NON_LLM_STACKS, StepTime, intra_gbs, peak_flops, training_step


@dataclass(frozen=True, slots=True, repr=False)
class Sample:
    """One measured run turned into features, speed of light and the measured efficiency."""

    row: Run
    features: list[float]
    sol: float
    """Whole-system throughput at 100% efficiency (core step: roofline, bubble, exposed communication)."""
    efficiency: float
    """measured / sol."""
    regime: str
    mfu_sol: float
    """Whole-system throughput at 100% MFU: peak x GPUs / the model's training FLOPs per item."""
    generation: str = ""
    """The GPU's architecture (ampere, hopper, blackwell, ...): the efficiency bound is per generation."""
    old_sol: float = 0.0
    """Whole-system throughput at the speed of light (roofline, bubble, alpha-beta communication): what the
    previous estimator multiplied by one efficiency; sol itself is the step composed from measured
    operations where the run is an LLM's (0: the same as sol)."""
    fits: bool = True
    """Whether the run's stated layout fits its GPU within the memory model's P10-P90 error (its P10 under the
    usable memory): a run that needs more even at the P10 ran with something the rebuilt step misses (a
    262k-token sequence needing 612 GB of 150), and sets no efficiency cap."""
    runs_as: str = ""
    """The --stack the run's stack is answered as (a data-only stack's runs_as, else the stack itself)."""

    @property
    def composed(self) -> bool:
        """Whether sol is the step composed from measured operations (its efficiency a residual, which may
        pass 1)."""
        return self.old_sol > 0.0 and self.old_sol != self.sol

    @property
    def family(self) -> str:
        """'llm': an LLM run of an LLM training stack; 'other': the rest (Lambda's NGC examples: CNNs, BERT,
        GNMT, speech, and its two 2019 Transformer-XL language models). Evaluated and calibrated apart."""
        llm = self.features[KIND_INDEX] == KIND_CODE["llm"] and self.row.stack not in NON_LLM_STACKS
        return "llm" if llm else "other"


KIND_INDEX = FEATURES.index("kind_code")


@dataclass(frozen=True, slots=True, repr=False)
class RunStep:
    """A measured run rebuilt as the core models it: its job, stated layout, fabric, traits and step."""

    job: Job
    layout: Layout
    fabric: Fabric
    traits: Traits
    step: StepTime


def step_of_run(knowledge: Knowledge, run: Run, stated_kernel: bool = False) -> RunStep | None:
    """The run's job, its layout exactly as stated and its step; None without a peak. `stated_kernel`: priced
    at the attention kernel the run's software states, where it states one (benchmarks/bench_within.py). The
    training samples keep the stack's usual kernel: a user's question states none, so a residual or an
    interval fitted on runs priced with it would be narrower than the answers it is applied to."""
    from advisor.learned.efficiency.explicit import job_of_run, stated_layout

    a = knowledge.assumptions
    gpu = knowledge.gpu(run.gpu)
    if peak_flops(gpu, run.precision) is None:
        return None
    job = job_of_run(knowledge, run)
    mb = run.micro_batch
    if mb is None:
        mb = measured_batch(knowledge, job, gpu, run.precision) or 1
    layout = stated_layout(job, run.count, run.nodes, run.precision, max(mb, 1), run.grad_accum)
    fabric = knowledge.assumptions.fabric.get(run.fabric) or knowledge_fabric(knowledge, job, gpu)
    memory = TrainingMemoryModel(job, gpu, run.precision, a)
    per_seq = memory.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
    traits = stack_of(knowledge, run.stack).traits(run.month)
    # A run of a non-LLM harness keeps the speed-of-light step of the models it is fitted with.
    attention = stated_attention(run.software, gpu.compute_capability_value) if stated_kernel else None
    llm = run.stack not in NON_LLM_STACKS
    step = training_step(job, gpu, layout, fabric, a, per_seq, traits, llm, attention)
    return None if step is None else RunStep(job, layout, fabric, traits, step)


def sample_of(knowledge: Knowledge, run: Run) -> Sample | None:
    """Rebuild a measured run as the core models it, its layout exactly as stated; None without a peak."""
    got = step_of_run(knowledge, run)
    if got is None:
        return None
    job, layout, fabric, traits, step = got.job, got.layout, got.fabric, got.traits, got.step
    gpu = knowledge.gpu(run.gpu)
    peak = peak_flops(gpu, run.precision) or 1.0
    sol = step.items / step.total_s
    inter = fabric.gbs_per_gpu(layout.node_size)
    intra = intra_gbs(gpu, min(run.count, layout.node_size), knowledge.assumptions)
    mfu_sol = peak * run.count / job.train_flops_per_item
    a = knowledge.assumptions
    memory = TrainingMemoryModel(job, gpu, run.precision, a)
    held = memory.components(layout, usable_gb(gpu, a)) if job.arch is not None else None
    return Sample(
        run,
        feature_vector(job, gpu, layout, step, inter, intra, traits),
        sol,
        run.throughput / sol,
        regime_of(job),
        mfu_sol,
        gpu.architecture,
        step.items / step.sol_s,
        held is None or held.low_gb <= held.usable_gb,
        stack_of(knowledge, run.stack).runs_as or run.stack,
    )


def knowledge_fabric(knowledge: Knowledge, job: Job, gpu: Gpu) -> Fabric:
    """The fabric the core assumes for this GPU (as a prediction would)."""
    return knowledge.assumptions.fabric[gpu.fabric]
