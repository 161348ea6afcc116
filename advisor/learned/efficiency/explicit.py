"""Provides the layout of a stated configuration: every value given, none searched (for measured runs)."""

from __future__ import annotations

from advisor.catalog.loader import Knowledge
from advisor.job.door import question
from advisor.job.inputs import STACKS, RunConfig, Workload, virtual_stages
from advisor.job.layout import Layout
from advisor.job.resolve import Job, resolve_job
from advisor.learned.efficiency.runs import Run
from advisor.question.errors import InputError

SHARDING = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}


def run_config(run: Run) -> RunConfig:
    """The run's configuration as a user would state it (stacks outside the CLI's list stay out of it)."""
    return question(
        RunConfig,
        dict(
            tp=run.tp,
            pp=run.pp,
            cp=run.cp,
            ep=run.ep,
            zero=run.zero if run.count > 1 else None,
            shard_group=run.shard_group,
            recompute=run.recompute,
            offload=run.offload,
            global_batch=run.global_batch,
            pp_schedule=f"interleaved:{run.virtual}" if run.virtual > 1 and run.pp > 1 else None,
            stack=run.stack if run.stack in STACKS else None,
        ),
    )


def workload_of_run(run: Run) -> Workload:
    """The workload of a measured run: its model, kind, precision, sequence, micro-batch and configuration."""
    return question(
        Workload,
        dict(
            model=run.workload if run.spec is None and run.params is None else None,
            spec=run.spec,
            params=run.params,
            kind=run.kind,
            precision=run.precision,
            seq_len=run.seq_len or None,
            batch_size=run.micro_batch,
            config=run_config(run),
        ),
    )


def job_of_run(knowledge: Knowledge, run: Run) -> Job:
    """The job the core resolves for the run's model, precision, sequence, micro-batch and configuration."""
    return resolve_job(knowledge, workload_of_run(run), need_data=False)


def stated_layout(
    job: Job, count: int, nodes: int, precision: str, micro_batch: int, grad_accum: int | None = None
) -> Layout:
    """The one layout the job's stated configuration names on count GPUs; InputError when it cannot exist."""
    c = job.config
    tp, pp, cp, ep = c.tp or 1, c.pp or 1, c.cp or 1, c.ep or 1
    if count % (tp * pp * cp) or count % nodes:
        raise InputError(f"{count} GPUs on {nodes} nodes do not split into TP{tp} x PP{pp} x CP{cp}")
    dp = count // (tp * pp * cp)
    if (dp * cp) % ep:
        raise InputError(f"EP{ep} does not divide the {dp * cp} data x context parallel ranks")
    zero = c.zero if c.zero is not None else 0
    if c.global_batch:
        accum, rest = divmod(c.global_batch, micro_batch * dp)
        if rest or accum < 1:
            raise InputError(
                f"global batch {c.global_batch} is not a multiple of micro-batch {micro_batch} x DP{dp}"
            )
    else:
        accum = grad_accum or 1
    return Layout(
        count=count,
        nodes=nodes,
        node_size=count // nodes,
        precision=precision,
        tp=tp,
        pp=pp,
        dp=dp,
        sharding=SHARDING[zero] if dp * cp > 1 else "none",
        recompute=c.recompute or "none",
        micro_batch=micro_batch,
        grad_accum=accum,
        cp=cp,
        ep=ep,
        shard_group=c.shard_group or 0,
        virtual=virtual_stages(c.pp_schedule) if c.pp_schedule and pp > 1 else 1,
    )
