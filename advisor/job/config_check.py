"""Provides check_config(): the one-line refusal (exit 2) of a stated configuration that cannot exist."""

from __future__ import annotations

from advisor.catalog.stacks import DIMENSIONS, shipped_stacks
from advisor.job.inputs import RunConfig, virtual_stages
from advisor.job.resolve import Job
from advisor.question.errors import InputError

TRAINING_ONLY = (
    "cp",
    "ep",
    "dp",
    "zero",
    "shard_group",
    "recompute",
    "global_batch",
    "global_batch_tokens",
    "pp_schedule",
    "master_weights",
    "offload",
    "stack",
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_kind(job: Job, c: RunConfig) -> None:
    given = c.given()
    if not job.training:
        wrong = [k for k in TRAINING_ONLY if k in given]
        if wrong:
            raise InputError(
                f"{_flag(wrong[0])} applies to training; --workload inference takes --tp, --pp, "
                "--engine and --headroom",
                field=wrong[0],
                value=given[wrong[0]],
                problem="applies to training only",
                accepted="leave it blank for serving",
            )
    elif c.engine is not None:
        raise InputError(
            "--engine applies to --workload inference; training takes --stack",
            field="engine",
            value=c.engine,
            problem="applies to serving only",
            accepted="training takes a stack",
        )
    if c.lora_targets is not None and job.kind not in ("lora", "qlora"):
        raise InputError(
            f"--lora-targets applies to --workload lora or qlora, not {job.kind}",
            field="lora_targets",
            value=c.lora_targets,
            problem=f"applies to LoRA and QLoRA, not {job.kind}",
        )


def _check_shape(job: Job, c: RunConfig) -> None:
    arch = job.arch
    if arch is None:
        if any(v not in (None, 1) for v in (c.tp, c.pp, c.cp, c.ep)):
            bad = next(k for k in ("tp", "pp", "cp", "ep") if getattr(c, k) not in (None, 1))
            raise InputError(
                f"--tp/--pp/--cp/--ep split a transformer; {job.model_id} is a {job.model_kind} "
                "(data parallel only)",
                field=bad,
                value=getattr(c, bad),
                problem=f"splits a transformer; {job.model_id} is a {job.model_kind}",
                accepted="1 or blank (data parallel only)",
            )
        return
    if c.tp and arch.heads % c.tp:
        raise InputError(
            f"--tp {c.tp} does not divide {job.model_id}'s {arch.heads} attention heads",
            field="tp",
            value=c.tp,
            problem=f"does not divide {job.model_id}'s {arch.heads} attention heads",
            accepted=f"a divisor of {arch.heads}",
        )
    if c.pp and c.pp > arch.layers:
        raise InputError(
            f"--pp {c.pp} is more than {job.model_id}'s {arch.layers} layers",
            field="pp",
            value=c.pp,
            problem=f"is more than {job.model_id}'s {arch.layers} layers",
            accepted=f"at most {arch.layers}",
        )
    if c.ep and c.ep > 1 and not arch.is_moe:
        raise InputError(
            f"--ep {c.ep}: {job.model_id} is dense (no experts to split)",
            field="ep",
            value=c.ep,
            problem=f"{job.model_id} is dense (no experts to split)",
            accepted="1 or blank",
        )
    if c.ep and arch.is_moe and arch.experts % c.ep:
        raise InputError(
            f"--ep {c.ep} does not divide {job.model_id}'s {arch.experts} experts",
            field="ep",
            value=c.ep,
            problem=f"does not divide {job.model_id}'s {arch.experts} experts",
            accepted=f"a divisor of {arch.experts}",
        )
    if c.cp and c.cp > 1 and job.seq_len % c.cp:
        raise InputError(
            f"--cp {c.cp} does not divide the sequence length {job.seq_len}",
            field="cp",
            value=c.cp,
            problem=f"does not divide the sequence length {job.seq_len}",
            accepted=f"a divisor of {job.seq_len}",
        )
    if c.pp_schedule is not None:
        v = virtual_stages(c.pp_schedule)
        pp = c.pp or 1
        if v > 1 and c.pp is not None and pp == 1:
            raise InputError(
                f"--pp-schedule {c.pp_schedule} needs --pp 2 or more",
                field="pp_schedule",
                value=c.pp_schedule,
                problem="needs pipeline parallelism of 2 or more",
                accepted="1f1b with pp 1",
            )
        if v > 1 and c.pp and arch.layers % (pp * v):
            raise InputError(
                f"--pp-schedule {c.pp_schedule} with --pp {pp}: {arch.layers} layers do not split "
                f"into {pp * v} equal chunks",
                field="pp_schedule",
                value=c.pp_schedule,
                problem=f"with pp {pp}: {arch.layers} layers do not split into {pp * v} equal chunks",
                accepted="V such that pp x V divides the layers",
            )


def _check_counts(job: Job, c: RunConfig, count: int | None) -> None:
    dims = {"dp": c.dp, "tp": c.tp, "pp": c.pp, "cp": c.cp}
    known = {k: v for k, v in dims.items() if v is not None}
    product = 1
    for v in known.values():
        product *= v
    if count is not None and len(known) == 4 and product != count:
        raise InputError(
            f"--dp {c.dp} x --tp {c.tp} x --pp {c.pp} x --cp {c.cp} = {product}, not --count {count}",
            field="dp",
            value=c.dp,
            problem=f"x tp x pp x cp = {product}, not the {count} GPUs",
        )
    if count is not None and count % product:
        names = " x ".join(f"--{k} {v}" for k, v in known.items())
        raise InputError(
            f"{names} = {product} does not divide --count {count}",
            field=next(iter(known)),
            value=next(iter(known.values())),
            problem=f"the product {product} does not divide the {count} GPUs",
        )
    if count is not None:  # data x context parallel ranks divide count / (tp x pp), whatever is chosen
        spare = count // ((c.tp or 1) * (c.pp or 1))
        for flag, value in (("--ep", c.ep), ("--shard-group", c.shard_group)):
            if value and spare % value:
                raise InputError(
                    f"{flag} {value} does not divide the {spare} data x context parallel ranks "
                    f"left by --count {count}",
                    field=flag[2:].replace("-", "_"),
                    value=value,
                    problem=f"does not divide the {spare} data x context parallel ranks",
                )
    dp = c.dp
    if dp is None and count is not None and len(known) == 3:
        dp = count // product
    if c.ep and dp and (dp * (c.cp or 1)) % c.ep:
        raise InputError(
            f"--ep {c.ep} does not divide the {dp * (c.cp or 1)} data x context parallel ranks",
            field="ep",
            value=c.ep,
            problem=f"does not divide the {dp * (c.cp or 1)} data x context parallel ranks",
        )
    if c.shard_group and dp and (dp * (c.cp or 1)) % c.shard_group:
        raise InputError(
            f"--shard-group {c.shard_group} does not divide the {dp * (c.cp or 1)} data x context "
            "parallel ranks",
            field="shard_group",
            value=c.shard_group,
            problem=f"does not divide the {dp * (c.cp or 1)} data x context parallel ranks",
        )
    if c.offload is not None and c.offload != "none" and c.zero == 0:
        raise InputError(
            f"--offload {c.offload} needs ZeRO (--zero 1, 2 or 3), not --zero 0",
            field="offload",
            value=c.offload,
            problem="needs ZeRO 1, 2 or 3, not ZeRO 0",
            accepted="none with ZeRO 0",
        )
    if c.offload == "params" and c.zero is not None and c.zero != 3:
        raise InputError(
            f"--offload params needs --zero 3 (parameter offload shards the weights), not --zero {c.zero}",
            field="offload",
            value=c.offload,
            problem=f"needs ZeRO 3, not ZeRO {c.zero}",
            accepted="none or optimizer",
        )
    gb = job.global_batch_seqs if job.global_batch_given else None
    if gb and dp and (gb % dp or (job.batch_size and gb % (dp * job.batch_size))):
        mb = job.batch_size or 1
        raise InputError(
            f"--global-batch {gb} is not divisible by dp {dp} x micro-batch {mb}",
            field="global_batch",
            value=gb,
            problem=f"is not divisible by dp {dp} x micro-batch {mb}",
            accepted=f"a multiple of {dp * mb}",
        )


def check_config(job: Job, count: int | None = None) -> None:
    """Refuse a stated configuration that cannot run, naming the clash (count: the GPUs, when fixed)."""
    c = job.config
    _check_kind(job, c)
    _check_shape(job, c)
    _check_counts(job, c, count)
    _check_stack(job, c)


_DIMENSION_NAMES = {"tp": "tensor", "pp": "pipeline", "cp": "context", "ep": "expert"}


def _check_stack(job: Job, c: RunConfig) -> None:
    """Refuse a stated layout the stated (or default) training stack cannot run."""
    stacks = shipped_stacks()
    stack = stacks.get(job.stack)
    if not job.training or stack is None:
        return
    for dim in DIMENSIONS:
        value = getattr(c, dim)
        if (value or 1) > 1 and not stack.runs(dim):
            able = ", ".join(k for k, s in stacks.items() if s.runs(dim) and not s.data_only)
            what = f"{_DIMENSION_NAMES[dim]} parallelism"
            raise InputError(
                f"{dim} {value}: {job.stack} cannot run {what}; stacks that run it: {able}",
                field=dim,
                value=value,
                problem=f"is {what}, which {job.stack} cannot run",
                accepted=f"1 with {job.stack}, or a stack that runs it: {able}",
            )
    if c.zero is not None and not stack.runs_zero(c.zero):
        stages = sorted({*stack.zero, *stack.zero_stated})
        raise InputError(
            f"zero {c.zero}: {job.stack} cannot run ZeRO stage {c.zero}",
            field="zero",
            value=c.zero,
            problem=f"is a ZeRO stage {job.stack} cannot run",
            accepted=f"{', '.join(map(str, stages))} with {job.stack}",
        )
