"""Provides the steps of resolve_job after the model's shape: trainable size, data, serving, run settings."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from advisor.catalog.loader import Knowledge
from advisor.job.inputs import RunConfig, Workload
from advisor.job.shape import Arch
from advisor.question.assumed import Assumed
from advisor.question.errors import InputError
from advisor.question.fields import default_of
from advisor.question.units import human
from advisor.question.vocab import Recompute, Stack

if TYPE_CHECKING:
    from advisor.catalog.stacks import Stack as TrainingStack
    from advisor.job.shape import ModelShape, WorkSize


def trainable(
    knowledge: Knowledge,
    workload: Workload,
    arch: Arch | None,
    kind: str,
    params: float,
    assumed: list[Assumed],
) -> tuple[int, float]:
    """The LoRA rank and the parameters that train (all of them, or the adapters)."""
    rank = workload.lora_rank or int(knowledge.assumptions.defaults["lora_rank"].value)
    targets = workload.config.lora_targets or "all"
    if kind in ("lora", "qlora") and workload.lora_rank is None:
        where = "every linear layer" if targets == "all" else "the attention projections"
        assumed.append(Assumed(text=f"LoRA rank {rank} on {where}", field="lora_rank"))
    if kind in ("lora", "qlora") and arch is not None:
        return rank, arch.lora_params(rank, targets)
    return rank, params


def _total_items(
    knowledge: Knowledge,
    workload: Workload,
    shape: ModelShape,
    kind: str,
    work: WorkSize,
    need_data: bool,
    assumed: list[Assumed],
) -> float:
    d = knowledge.assumptions.defaults
    per_token = shape.kind == "llm" or shape.spec is None
    if workload.tokens is not None:
        if work.unit != "tokens/s":
            raise InputError(
                field="tokens",
                value=workload.tokens,
                problem=f"applies to models counted in tokens; {shape.model_id} counts "
                f"{work.unit.removesuffix('/s')}",
                accepted="give the samples per epoch instead",
            )
        return workload.tokens * workload.epochs
    if workload.samples is not None:
        return workload.samples * workload.epochs * work.items_per_seq
    if not need_data:
        return 0.0
    if kind == "pretrain" and per_token:
        total = d["pretrain_tokens_per_param"].value * shape.params
        assumed.append(
            Assumed(
                text=f"{human(total)} training tokens = {d['pretrain_tokens_per_param'].value:g} per "
                "parameter, compute-optimal",
                field="tokens",
            )
        )
        return total
    if per_token:
        total = d["finetune_tokens"].value * workload.epochs
        assumed.append(
            Assumed(
                text=f"{human(total)} fine-tuning tokens", note="an Alpaca-sized data set", field="tokens"
            )
        )
        return total
    item = shape.spec.item if shape.spec is not None and shape.spec.item else "sample"
    raise InputError(
        field="samples",
        problem=f"is needed: training {shape.model_id} needs a data size",
        accepted=f"how many {item}s per epoch, e.g. 200k",
    )


def _global_batch(
    knowledge: Knowledge, workload: Workload, shape: ModelShape, kind: str, seq_len: int
) -> int:
    """Sequences per optimizer step: the user's, else the sourced default (0: non-LLM, dp x micro-batch)."""
    d, c = knowledge.assumptions.defaults, workload.config
    if c.global_batch is not None:
        return c.global_batch
    if c.global_batch_tokens is not None:
        return max(1, math.ceil(c.global_batch_tokens / max(seq_len, 1)))
    if not (shape.kind == "llm" or shape.spec is None):
        return 0  # non-LLM: every GPU runs its benchmark batch, no accumulation
    if kind == "pretrain":
        return max(1, math.ceil(d["pretrain_global_batch_tokens"].value / max(seq_len, 1)))
    return int(d["finetune_global_batch_seqs"].value)


def data_size(
    knowledge: Knowledge,
    workload: Workload,
    shape: ModelShape,
    kind: str,
    work: WorkSize,
    seq_len: int,
    need_data: bool,
    assumed: list[Assumed],
) -> tuple[float, int]:
    """Items the job processes, and its global batch in sequences (a defaulted LLM one named in `assumed`)."""
    total = _total_items(knowledge, workload, shape, kind, work, need_data, assumed)
    seqs = _global_batch(knowledge, workload, shape, kind, seq_len)
    c = workload.config
    if seqs and c.global_batch is None and c.global_batch_tokens is None:
        assumed.append(_global_batch_assumed(knowledge, kind, seqs, seq_len))
    return total, seqs


def _global_batch_assumed(knowledge: Knowledge, kind: str, seqs: int, seq_len: int) -> Assumed:
    """What an answer says of the global batch it was not given: the sourced default it starts from (the
    search then rounds it to whole micro-batches per data-parallel rank, and grows a pre-training one with the
    GPU count past the per-GPU floor)."""
    rounded = "rounded to whole micro-batches per data-parallel rank; the gradient accumulation follows"
    if kind == "pretrain":
        floor = knowledge.assumptions.defaults["pretrain_global_batch_tokens_per_gpu"].value
        return Assumed(
            text=f"global batch about {human(seqs * seq_len)} tokens per optimizer step "
            f"({seqs:,} sequences of {seq_len:,})",
            note=f"Llama 2's; at least {floor:,.0f} tokens per GPU, {rounded}",
            field="global_batch",
        )
    return Assumed(
        text=f"global batch {seqs:,} sequences per optimizer step",
        note=f"Llama 2's fine-tuning batch, {rounded}",
        field="global_batch",
    )


def serving_inputs(
    knowledge: Knowledge, workload: Workload, shape: ModelShape, training: bool, assumed: list[Assumed]
) -> dict[str, Any]:
    """Prompt and output lengths, latency targets and load, defaults named."""
    d = knowledge.assumptions.defaults
    prompt = workload.prompt_tokens or int(d["prompt_tokens"].value)
    output = workload.output_tokens or int(d["output_tokens"].value)
    tpot = workload.tpot_ms or d["tpot_target_ms"].value
    rps = workload.requests_per_s or 0.0
    if not training:
        if workload.prompt_tokens is None:
            assumed.append(Assumed(text=f"{prompt} prompt tokens per request", field="prompt_tokens"))
        if workload.output_tokens is None:
            assumed.append(Assumed(text=f"{output} output tokens per request", field="output_tokens"))
        if workload.tpot_ms is None:
            assumed.append(Assumed(text=f"latency target {tpot:g} ms per output token", field="tpot_ms"))
        rps = _load(workload, assumed)
        if workload.slo_percentile is None:
            assumed.append(
                Assumed(text="latency targets held by the median request (P50)", field="slo_percentile")
            )
        spec = shape.spec
        if (
            shape.arch is not None
            and spec is not None
            and spec.max_seq_len
            and prompt + output > spec.max_seq_len
        ):
            raise InputError(
                field="output_tokens",
                value=output,
                problem=f"makes prompt + output = {prompt + output} tokens, past {shape.model_id}'s context "
                f"of {spec.max_seq_len}",
                accepted=f"prompt + output of at most {spec.max_seq_len} tokens",
            )
    return {
        "prompt_tokens": prompt,
        "output_tokens": output,
        "requests_per_s": rps,
        "tpot_ms": tpot,
        "ttft_ms": workload.ttft_ms,
        "slo_percentile": workload.slo_percentile or default_of("slo_percentile"),
        "concurrency": workload.concurrency,
        "num_prompts": workload.num_prompts,
    }


def _load(workload: Workload, assumed: list[Assumed]) -> float:
    """The serving load's request rate (0 with a concurrency or a burst); one load at a time."""
    if workload.concurrency is not None and workload.requests_per_s is not None:
        raise InputError(
            field="concurrency",
            value=workload.concurrency,
            problem="is given with a request rate",
            accepted="one load: requests in flight (a closed loop) or requests per second (an open loop)",
        )
    if workload.num_prompts is not None and workload.requests_per_s == math.inf:
        raise InputError(
            field="num_prompts",
            value=workload.num_prompts,
            problem="is given with an infinite request rate",
            accepted="N prompts alone (a burst at once), N through the concurrency, or N at a finite rate",
        )
    if workload.requests_per_s is None and workload.concurrency is None and workload.num_prompts is None:
        rps = default_of("requests_per_s")
        assumed.append(Assumed(text=f"load {rps:g} request/s", field="requests_per_s"))
        return rps
    return workload.requests_per_s or 0.0


def run_settings(workload: Workload, shape: ModelShape, kind: str, assumed: list[Assumed]) -> dict[str, Any]:
    """The stack, master weights, offload and LoRA targets; a default stack is named in `assumed`."""
    c = workload.config
    stack = c.stack
    if stack is None and kind != "inference" and shape.arch is not None:
        stack, why = default_stack(kind, c, moe=shape.arch.is_moe, precision=workload.precision)
        assumed.append(
            Assumed(
                text=f"training stack: {stack} ({why})",
                note=(
                    "its layouts, kernels, loss path and runtime overhead; the interval also spans the "
                    "other measured stacks' residuals"
                ),
                field="stack",
            )
        )
    master = c.master_weights if c.master_weights is not None else True
    if c.fused_loss in FUSED_WORDS:
        assumed.append(
            Assumed(
                text=f"loss: {FUSED_WORDS[c.fused_loss]} (stated)",
                note=f"knowledge/assumptions.toml [loss.{c.fused_loss}], read from the kernel's code",
                field="fused_loss",
            )
        )
    if c.moe_dispatcher is not None:
        moe = shape.arch is not None and shape.arch.is_moe
        assumed.append(
            Assumed(
                text=f"MoE dispatcher: {DISPATCHER_WORDS[c.moe_dispatcher]} (stated)"
                if moe
                else f"MoE dispatcher {c.moe_dispatcher}: the model has no experts; it changes nothing",
                note="prices the expert-parallel exchange only where expert parallelism runs (EP > 1)",
                field="moe_dispatcher",
            )
        )
    return {
        "stack": stack or "pytorch",
        "master_weights": master,
        "offload": c.offload or "none",
        "fused_loss": c.fused_loss or default_of("fused_loss"),
        "lora_targets": c.lora_targets or "all",
        "moe_dispatcher": c.moe_dispatcher or default_of("moe_dispatcher"),
    }


FUSED_WORDS = {
    "liger": "Liger-Kernel's fused linear cross-entropy: the logits held one chunk of about tokens x hidden "
    "at a time, never the full fp32 logits",
    "flash-attn": "FlashAttention's cross-entropy kernel: the 16-bit logits and their log-sum-exp kept, "
    "no fp32 log-softmax",
    "chunked": "a chunked output layer and cross-entropy (torchtitan's ChunkedLossWrapper): one of 8 chunks' "
    "logits held at a time",
}
"""How an answer states a fused loss the user gave (--fused-loss)."""

DISPATCHER_WORDS = {
    "alltoall": "NCCL all-to-all, a copy of each token to each of its experts",
    "allgather": "all-gather of every token to every expert-parallel rank, reduce-scatter back",
    "deepep": "DeepEP, a token sent once to each server its experts are on, at DeepEP's measured bandwidth",
}
"""How an answer states a MoE dispatcher the user gave (--moe-dispatcher)."""


BEST_CASE_STACK: Stack = "megatron"
"""The stack whose answer an unstated stack's interval also spans: Megatron-Core/NeMo, the stack of most
published pre-training runs from 9 GPUs up in knowledge/llm_benchmarks.csv and benchmarks.csv (counted by
source: 4 of 7 at 9-255 GPUs, 8 of 10 from 256; FSDP-style stacks 4 of 7 on one server) and of the vendors'
recipes, with fused kernels, Transformer Engine FP8 and searched 4D layouts: the best case a user who names
no stack could reach."""


RECIPE_FIELDS = (
    "tp", "pp", "cp", "ep", "dp", "zero", "shard_group", "recompute", "global_batch", "global_batch_tokens",
    "pp_schedule", "offload", "stack",
)  # fmt: skip
"""The run-configuration fields of a training recipe: a workload that states none of them (nor a micro-batch)
left the whole recipe to the tool."""


def open_recompute(workload: Workload, stack: TrainingStack, params: float, chosen: str) -> Recompute | None:
    """The recomputation an answer whose recipe the user left wholly open should also be priced with (its P50
    taken between the two and the interval spanning both), or None: when any of the recipe was stated, when
    the plan already recomputes, or when the assumed stack's public runs at this model size agree on none
    (knowledge/training_stacks.toml `recompute_open_from_params`)."""
    c = workload.config
    if workload.batch_size is not None or any(getattr(c, name) is not None for name in RECIPE_FIELDS):
        return None
    if chosen != "none" or not stack.recompute_open(params):
        return None
    return "full"


def open_stack(workload_stack: str | None, kind: str, default: str) -> Stack | None:
    """The other stack an answer whose stack the user left open should also be priced on (its P50 said and
    the interval spanning it), or None: when the stack was stated, for serving, or when the default already
    is the best-case stack."""
    if workload_stack is not None or kind == "inference" or default == BEST_CASE_STACK:
        return None
    return BEST_CASE_STACK


def default_stack(kind: str, c: RunConfig, moe: bool = False, precision: str = "auto") -> tuple[Stack, str]:
    """The stack a typical run of this kind uses when none is named, and why: a typical PyTorch FSDP stack
    for pre-training; for fine-tuning, TRL's SFTTrainer, the Hugging Face Trainer as fine-tuning toolkits
    run it (gradient checkpointing on: SFTConfig's default, as in axolotl's examples, LLaMA-Factory,
    torchtune and Unsloth, and in 25 of the 36 shipped fine-tuning runs that state it); for pre-training with
    stated tensor or context parallelism, torchtitan (PyTorch's DTensor TP with sequence parallelism beside
    FSDP2: Megatron-Core's overlapped TP is a best case its named stack earns, not what a run that names no
    stack can be assumed to get); Megatron only where a stated layout needs pipeline or expert parallelism,
    which those cannot run; for any training in FP8 (its GEMMs need FP8 kernels, Transformer Engine's in
    Megatron-Core/NeMo; neither the FSDP nor the fine-tuning toolkits' stack has them in
    knowledge/training_stacks.toml, so an FP8 fine-tune typed on them was answered with neither FP8 kernels
    nor the layouts FP8 recipes run); and for pre-training a mixture of experts (its experts split by expert
    parallelism, which the FSDP stack never chooses)."""
    if (c.pp or 1) > 1 or (c.ep or 1) > 1:
        return "megatron", "the stated pipeline or expert parallelism needs a Megatron-style stack"
    if precision == "fp8":
        return (
            "megatron",
            "FP8 training needs Transformer Engine's FP8 kernels, as Megatron-Core runs them",
        )
    if kind == "pretrain":
        if (c.tp or 1) > 1 or (c.cp or 1) > 1:
            # PyTorch's own tensor parallelism (DTensor TP with sequence-parallel norms, FSDP2 beside it), as
            # its reference stack runs it: no Megatron-Core userbuffer overlap, kernels or runtime assumed
            # (the interval still spans Megatron's answer, open_stack).
            return (
                "torchtitan",
                "the stated tensor or context parallelism, as PyTorch's own stack runs it (DTensor, FSDP2)",
            )
        if moe:
            return (
                "megatron",
                "a mixture of experts pre-trains with expert parallelism, as Megatron-Core runs it",
            )
        return (
            "fsdp",
            "a typical PyTorch FSDP stack: eager modules, SDPA attention, no compile or FP8 kernels",
        )
    return "trl", "TRL's SFTTrainer, as fine-tuning toolkits run the Hugging Face Trainer: checkpointing on"
