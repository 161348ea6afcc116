"""Provides check_config(): the one-line refusal (exit 2) of a stated configuration that cannot exist."""

from __future__ import annotations

import math

from advisor.catalog.stacks import DIMENSIONS, shipped_stacks
from advisor.job.inputs import RunConfig, virtual_stages
from advisor.job.resolve import Arch, Job
from advisor.question.errors import InputError
from advisor.question.fields import inapplicable
from advisor.question.vocab import RECOMPUTE_MODULES


def _check_kind(job: Job, c: RunConfig) -> None:
    """A stated value the workload would ignore: the registry says which workloads use each field."""
    given = c.given()
    error = inapplicable(given, job.kind, values=given)
    if error is not None:
        raise error


def _check_shape(job: Job, c: RunConfig) -> None:
    arch = job.arch
    if arch is None:
        if any(v not in (None, 1) for v in (c.tp, c.pp, c.cp, c.ep)):
            bad = next(k for k in ("tp", "pp", "cp", "ep") if getattr(c, k) not in (None, 1))
            raise InputError(
                field=bad,
                value=getattr(c, bad),
                problem=f"splits a transformer; {job.model_id} is a {job.model_kind}",
                accepted="1 or blank (data parallel only)",
            )
        return
    _check_splits(job, c, arch)
    if c.pp_schedule is not None:
        _check_schedule(c, arch.layers)


def _check_splits(job: Job, c: RunConfig, arch: Arch) -> None:
    """Tensor, pipeline, expert and context parallel sizes against the model's heads, layers, experts and
    sequence."""
    if c.tp and arch.heads % c.tp:
        raise InputError(
            field="tp",
            value=c.tp,
            problem=f"does not divide {job.model_id}'s {arch.heads} attention heads",
            accepted=f"a divisor of {arch.heads}",
        )
    if c.pp and c.pp > arch.layers:
        raise InputError(
            field="pp",
            value=c.pp,
            problem=f"is more than {job.model_id}'s {arch.layers} layers",
            accepted=f"at most {arch.layers}",
        )
    if c.ep and c.ep > 1 and not arch.is_moe:
        raise InputError(
            field="ep",
            value=c.ep,
            problem=f"splits experts, but {job.model_id} is dense",
            accepted="1 or blank",
        )
    if c.ep and arch.is_moe and arch.experts % c.ep:
        raise InputError(
            field="ep",
            value=c.ep,
            problem=f"does not divide {job.model_id}'s {arch.experts} experts",
            accepted=f"a divisor of {arch.experts}",
        )
    if c.cp and c.cp > 1 and job.seq_len % c.cp:
        raise InputError(
            field="cp",
            value=c.cp,
            problem=f"does not divide the sequence length {job.seq_len}",
            accepted=f"a divisor of {job.seq_len}",
        )


# Pipeline chunks the embedding and the loss can each hold in place of a layer (_check_schedule).
EMBEDDING_AND_LOSS = 2


def _check_schedule(c: RunConfig, layers: int) -> None:
    """An interleaved schedule needs pipeline stages and something on every chunk: pp x V chunks of
    contiguous layers, the first ones a layer larger when they do not divide (Megatron's split, as the step
    model prices it; Megatron-Bridge's Llama 3.1 405B recipes run 126 layers as PP8 x V8). The embedding and
    the loss may each stand in for a layer (Megatron-LM's --account-for-embedding-in-pipeline-split and
    --account-for-loss-in-pipeline-split, or a --pipeline-model-parallel-layout whose first chunk is the
    embedding alone and last the loss alone: NVIDIA/Megatron-LM@00caa53af309:megatron/core/transformer/
    pipeline_parallel_layer_layout.py), so L layers fill up to L + 2 chunks: Qwen3-235B's 94 on PP32 x V3."""
    v = virtual_stages(c.pp_schedule or "1f1b")
    pp = c.pp or 1
    if v > 1 and c.pp is not None and pp == 1:
        raise InputError(
            field="pp_schedule",
            value=c.pp_schedule,
            problem="needs pipeline parallelism of 2 or more",
            accepted="1f1b with pp 1",
        )
    if v > 1 and c.pp and layers + EMBEDDING_AND_LOSS < pp * v:
        raise InputError(
            field="pp_schedule",
            value=c.pp_schedule,
            problem=f"with pp {pp}: {layers} layers, the embedding and the loss do not fill {pp * v} chunks",
            accepted="V such that pp x V is at most the layers + 2",
        )


def _check_counts(job: Job, c: RunConfig, count: int | None) -> None:
    """The stated sizes against the GPU count and each other; the offload and the global batch."""
    known = {k: v for k, v in {"dp": c.dp, "tp": c.tp, "pp": c.pp, "cp": c.cp}.items() if v is not None}
    product = math.prod(known.values())
    if count is not None:
        _check_product(c, known, product, count)
    dp = c.dp
    if dp is None and count is not None and len(known) == 3:
        dp = count // product
    if dp:
        _check_ranks(c, dp * (c.cp or 1), "", c.tp or 1)
    _check_offload(c)
    gb = job.global_batch_seqs if job.global_batch_given else None
    if gb and dp and (gb % dp or (job.batch_size and gb % (dp * job.batch_size))):
        mb = job.batch_size or 1
        raise InputError(
            field="global_batch",
            value=gb,
            problem=f"is not divisible by dp {dp} x micro-batch {mb}",
            accepted=f"a multiple of {dp * mb}",
        )


def _check_product(c: RunConfig, known: dict[str, int], product: int, count: int) -> None:
    """dp x tp x pp x cp is the count when all four are stated, and divides it otherwise."""
    if len(known) == 4 and product != count:
        raise InputError(
            field="dp",
            value=c.dp,
            problem=f"x tp {c.tp} x pp {c.pp} x cp {c.cp} = {product}, not the {count} GPUs",
            accepted=f"sizes whose product is {count}",
        )
    if count % product:
        # 'tp: 8 x pp 2 = 16 does not divide ...'; one size alone: 'tp: 16 does not divide ...'
        rest = "".join(f" x {k} {v}" for k, v in list(known.items())[1:])
        raise InputError(
            field=next(iter(known)),
            value=next(iter(known.values())),
            problem=f"{rest.removeprefix(' ')} = {product} does not divide the {count} GPUs"
            if rest
            else f"does not divide the {count} GPUs",
            accepted=f"sizes whose product divides {count}",
        )
    # data x context parallel ranks divide count / (tp x pp), whatever is chosen
    _check_ranks(c, count // ((c.tp or 1) * (c.pp or 1)), " left by the GPUs", c.tp or 1)


def _check_ranks(c: RunConfig, ranks: int, where: str, tp: int) -> None:
    """The shard group divides the data x context parallel ranks; expert parallelism those ranks, or, folded
    over the tensor-parallel ranks as well (MoE parallel folding, Layout.expert_tp: EP 32 on TP 2 x DP 16),
    the tensor x data x context parallel ranks."""
    if c.shard_group and ranks % c.shard_group:
        raise InputError(
            field="shard_group",
            value=c.shard_group,
            problem=f"does not divide the {ranks} data x context parallel ranks{where}",
            accepted=f"a divisor of {ranks}",
        )
    if c.ep and (ranks * tp) % c.ep:
        what = "tensor x data x context" if tp > 1 else "data x context"
        raise InputError(
            field="ep",
            value=c.ep,
            problem=f"does not divide the {ranks * tp} {what} parallel ranks{where}",
            accepted=f"a divisor of {ranks * tp}",
        )


def _check_offload(c: RunConfig) -> None:
    if c.offload is not None and c.offload != "none" and c.zero == 0:
        raise InputError(
            field="offload",
            value=c.offload,
            problem="needs ZeRO 1, 2 or 3, not ZeRO 0",
            accepted="none with ZeRO 0",
        )
    if c.offload == "params" and c.zero is not None and c.zero != 3:
        raise InputError(
            field="offload",
            value=c.offload,
            problem=f"needs ZeRO 3, not ZeRO {c.zero}",
            accepted="none or optimizer",
        )


def check_config(job: Job, count: int | None = None) -> None:
    """Refuse a stated configuration that cannot run, naming the clash (count: the GPUs, when fixed)."""
    c = job.config
    _check_kind(job, c)
    _check_shape(job, c)
    _check_counts(job, c, count)
    _check_stack(job, c)
    if c.recompute_modules:
        _check_modules(job, c.recompute_modules)


# The recompute modules Megatron-Core refuses without a part this tool does not model: the GatedDeltaNet and
# GatedDeltaProduct attention variants and the hyper-connections (NVIDIA/Megatron-LM@d98e8a64ddf3:
# megatron/core/transformer/transformer_config.py, recompute_modules' docstring and __post_init__).
_UNMODELLED_MODULES = {
    "gdn_norm_out": "a GatedDeltaNet attention",
    "gdp_in_proj": "a GatedDeltaProduct attention",
    "gdp_qkv": "a GatedDeltaProduct attention",
    "mhc": "hyper-connections (enable_mhc_connections)",
}


def _check_modules(job: Job, modules: tuple[str, ...]) -> None:
    """Recompute modules are Megatron-Core's (a stack with them: megatron); moe_act needs a mixture of
    experts (Megatron: only with moe_grouped_gemm) and mla_up_proj multi-latent attention, as Megatron's
    TransformerConfig checks; the rest need model parts the tool does not model."""
    shown = ",".join(modules)
    if job.stack != "megatron":
        raise InputError(
            field="recompute_modules",
            value=shown,
            problem=f"names Megatron-Core's recompute modules; {job.stack} has none",
            accepted="stack megatron with them, or recompute selective or full without",
        )
    arch = job.arch
    needs = {m: f"needs {part}, which this tool does not model" for m, part in _UNMODELLED_MODULES.items()}
    if arch is None or not arch.is_moe:
        needs["moe_act"] = f"needs a mixture of experts; {job.model_id} is dense"
    if arch is None or arch.kv_lora_rank is None:
        needs["mla_up_proj"] = f"needs multi-latent attention, which {job.model_id} has not"
    bad = next((m for m in modules if m in needs), None)
    if bad is not None:
        usable = [m for m in RECOMPUTE_MODULES if m not in needs]
        raise InputError(
            field="recompute_modules",
            value=bad,
            problem=needs[bad],
            accepted="modules of this model: " + ", ".join(usable),
        )


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
