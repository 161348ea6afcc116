"""Provides resolve_job(): the user's workload turned into the quantities the models need, defaults named."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from advisor.catalog.loader import Knowledge
from advisor.catalog.models import ModelSpec
from advisor.job.inputs import RunConfig, Workload, stated
from advisor.job.shape import (
    Arch,
    ModelShape,
    WorkSize,
    arch_of,
    dense_arch_for,
    transformer_flops_per_token,
)
from advisor.question.assumed import Assumed
from advisor.question.errors import InputError
from advisor.question.units import human

__all__ = [
    "Arch",
    "Job",
    "dense_arch_for",
    "leaner_recipe",
    "memory_floor_job",
    "resolve_job",
    "transformer_flops_per_token",
]


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Job:
    """A resolved workload: what the memory, speed and cost models compute from."""

    kind: str
    training: bool
    model_id: str
    model_name: str
    model_kind: str
    params: float
    active_params: float
    arch: Arch | None
    seq_len: int
    unit: str
    """Throughput unit: tokens/s for LLMs, the measured unit for benchmarked workloads."""
    items_per_sequence: int
    """Throughput items in one batch element (seq_len for LLM training, 1 for an image)."""
    fwd_flops_per_item: float
    train_flops_per_item: float
    activation_bytes_per_item: float
    total_items: float
    """Items the training job processes (tokens or samples x epochs); 0 for inference."""
    global_batch_seqs: int
    trainable_params: float
    lora_rank: int
    optimizer: str
    batch_size: int | None
    dataset_gb: float
    prompt_tokens: int
    output_tokens: int
    requests_per_s: float
    tpot_ms: float
    ttft_ms: float | None
    slo_percentile: int = 50
    """The percentile of requests the latency targets hold for (50, 90 or 99)."""
    concurrency: int | None = None
    """Requests in flight on the whole deployment (a closed loop), when the user states the load so."""
    num_prompts: int | None = None
    """A finite burst of this many prompts sent at once (None: the steady state of the load)."""
    precision: str = "auto"
    """As asked: 'auto' resolves per GPU to bf16 or fp16."""
    assumed: tuple[Assumed, ...] = field(default=())
    spec: ModelSpec | None = None
    config: RunConfig = field(default_factory=RunConfig)
    """The configuration the user stated; the search holds every given value."""
    stack: str = "pytorch"
    """The training stack (megatron, hf, ...): decides the loss path and the runtime overhead."""
    master_weights: bool = True
    offload: str = "none"
    fused_loss: str = "off"
    """'liger': the output layer and loss run as Liger-Kernel's chunked fused linear cross-entropy."""
    lora_targets: str = "all"
    moe_dispatcher: str = "alltoall"
    """The MoE token dispatcher pricing the expert-parallel exchange: alltoall, allgather or deepep."""
    global_batch_given: bool = False
    given_workload: frozenset[str] = frozenset()
    """The workload fields the user set (the rest are defaults)."""
    profile: str | None = None
    """The calibration profile named by the user (None: the default one per GPU and stack or engine)."""
    stack_version: str | None = None
    """The stack's or engine's version the user named."""
    memory_floor: bool = False
    """Memory counted at the leanest runtime the catalogue sources (physics/memory.py floor_traits): a job
    whose stack the user did not name, when the assumed stack fits nothing (memory_floor_job)."""

    @property
    def is_transformer(self) -> bool:
        """Whether per-layer transformer formulas apply."""
        return self.arch is not None

    @property
    def params_b(self) -> float:
        """Total parameters in billions."""
        return self.params / 1e9


def _of_width(head_dim: int | None) -> str:
    """' of <n>' where a shape states its head width apart from hidden / heads (Qwen3, Gemma)."""
    return f" of {head_dim}" if head_dim else ""


def _model_shape(knowledge: Knowledge, workload: Workload, assumed: list[Assumed]) -> ModelShape:
    spec = knowledge.model(workload.model) if workload.model else workload.spec
    if spec is not None:
        if workload.spec is not None:
            assumed.append(
                Assumed(
                    text=f"model shape from {spec.source}: {spec.layers} layers, hidden {spec.hidden}, "
                    f"{spec.heads} heads{_of_width(spec.kv_channels)} ({spec.kv_heads} KV), "
                    f"{'' if spec.gated_ffn else 'plain '}FFN "
                    f"{spec.ffn_hidden}, vocab {spec.vocab}, {human(spec.params)} parameters counted from "
                    "the shape"
                )
            )
        return ModelShape(spec, arch_of(spec), spec.params, spec.active, spec.id, spec.name, spec.kind)
    params = float(workload.params or 0)
    arch = dense_arch_for(params)
    assumed.append(
        Assumed(
            text=f"custom model shape: {arch.layers} layers, hidden {arch.hidden}, {arch.heads} heads "
            f"({arch.kv_heads} KV), gated FFN {arch.ffn_hidden}, vocab {arch.vocab}",
            note="Llama 3 proportions, arXiv:2407.21783",
            field="spec",
        )
    )
    return ModelShape(
        None,
        arch,
        params,
        params,
        f"custom-{human(params)}",
        f"custom dense transformer, {human(params)} parameters",
        "llm",
    )


def _workload_kind(workload: Workload, shape: ModelShape, assumed: list[Assumed]) -> str:
    kind = workload.kind
    if kind is None:
        # A catalogue LLM or a published config.json is fine-tuned; a bare shape or size is trained from
        # scratch.
        from_shape = shape.spec is not None and shape.spec.source == "shape"
        kind = "finetune" if shape.kind == "llm" and shape.spec is not None and not from_shape else "pretrain"
        assumed.append(Assumed(text=f"workload: {kind}", field="kind"))
    if kind in ("lora", "qlora", "inference") and shape.arch is None:
        raise InputError(
            field="kind",
            value=kind,
            problem=f"needs a transformer model; {shape.model_id} is a {shape.kind}",
            accepted="pretrain or finetune",
        )
    return kind


def _seq_len(
    knowledge: Knowledge, workload: Workload, shape: ModelShape, kind: str, assumed: list[Assumed]
) -> int:
    """The user's, else the workload's own (BERT, ViT), else the model's context or a default."""
    spec = shape.spec
    if workload.seq_len:
        return workload.seq_len
    if spec is not None and spec.seq_len:
        return spec.seq_len
    if shape.arch is not None and shape.kind == "llm":
        default = int(knowledge.assumptions.defaults["llm_seq_len"].value)
        seq_len = min(spec.max_seq_len, default) if spec is not None and spec.max_seq_len else default
        if kind != "inference":  # serving sizes by prompt and output tokens instead
            assumed.append(Assumed(text=f"sequence length {seq_len} tokens", field="seq_len"))
        return seq_len
    return 0


def _work(shape: ModelShape, seq_len: int) -> WorkSize:
    """Throughput unit, items per batch element, FLOPs and activation bytes per item."""
    spec, arch = shape.spec, shape.arch
    if shape.kind == "llm" or spec is None:
        fwd = transformer_flops_per_token(shape.active, arch, seq_len) if arch else 0.0
        train = 3.0 * fwd
        if spec is not None and spec.train_flops_per_item:  # a measured or derived figure beats the formula
            train = spec.train_flops_per_item
            fwd = spec.forward_flops_per_item or train / 3.0
        return WorkSize("tokens/s", max(seq_len, 1), fwd, train, 0.0)
    unit = spec.throughput_unit or "samples/s"
    # Workloads counted in parts of a sample (GNMT tokens, Tacotron2 mel frames, WaveGlow audio samples)
    # batch whole samples of seq_len items.
    whole = unit in ("images/s", "sequences/s", "samples/s")
    items_per_seq = spec.seq_len if spec.seq_len and not whole else 1
    if spec.train_flops_per_item is not None:
        train = spec.train_flops_per_item
        fwd = spec.forward_flops_per_item or train / 3.0
    else:  # a catalogue transformer (BERT, ViT) without a measured figure: per sequence from its shape
        assert arch is not None
        fwd = transformer_flops_per_token(shape.active, arch, seq_len) * max(seq_len, 1)
        train = 3.0 * fwd
    return WorkSize(unit, items_per_seq, fwd, train, spec.activation_bytes_per_item)


def resolve_job(knowledge: Knowledge, workload: Workload, *, need_data: bool = True) -> Job:
    """Resolve a workload against the catalogue, filling every unspecified input from assumptions.toml.

    need_data=False (predictions of throughput) leaves the job's size at 0 instead of asking for it.
    """
    from advisor.job.data import data_size, run_settings, serving_inputs, trainable

    assumed: list[Assumed] = []
    shape = _model_shape(knowledge, workload, assumed)
    kind = _workload_kind(workload, shape, assumed)
    seq_len = _seq_len(knowledge, workload, shape, kind, assumed)
    work = _work(shape, seq_len)
    rank, trainable_params = trainable(knowledge, workload, shape.arch, kind, shape.params, assumed)
    training = kind != "inference"
    total_items, global_seqs = (
        data_size(knowledge, workload, shape, kind, work, seq_len, need_data, assumed)
        if training
        else (0.0, 0)
    )
    serving = serving_inputs(knowledge, workload, shape, training, assumed)
    settings = run_settings(workload, shape, kind, assumed)
    traits = knowledge.assumptions.stack.get(settings["stack"])
    if workload.config.master_weights is None and traits is not None:
        settings["master_weights"] = traits.master_weights  # what the stack keeps unless told otherwise
    return Job(
        kind=kind,
        training=training,
        model_id=shape.model_id,
        model_name=shape.name,
        model_kind=shape.kind,
        params=shape.params,
        active_params=shape.active,
        arch=shape.arch,
        seq_len=seq_len,
        unit=work.unit,
        items_per_sequence=work.items_per_seq,
        fwd_flops_per_item=work.fwd,
        train_flops_per_item=work.train,
        activation_bytes_per_item=work.act_bytes,
        total_items=total_items,
        global_batch_seqs=global_seqs,
        trainable_params=trainable_params,
        lora_rank=rank,
        optimizer=workload.optimizer,
        batch_size=workload.batch_size,
        dataset_gb=workload.dataset_gb,
        precision=workload.precision,
        assumed=tuple(assumed),
        spec=shape.spec,
        config=workload.config,
        given_workload=stated(workload),
        profile=workload.profile,
        stack_version=workload.stack_version,
        global_batch_given=workload.config.global_batch is not None
        or workload.config.global_batch_tokens is not None,
        **serving,
        **settings,
    )


def leaner_recipe(knowledge: Knowledge, workload: Workload, job: Job, count: int) -> Job | None:
    """The job under the fine-tuning recipe made for little memory, to try when the default stack fits
    nothing: torchtune's (bf16 weights and AdamW states with no fp32 copy, the optimizer stepped in
    backward, activation checkpointing and a chunked loss), on one GPU with its single-device config's
    PagedAdamW8bit (torchtune-config). None when the stack was stated or the workload is not a full
    fine-tune."""
    stated = workload.config
    if job.kind != "finetune" or stated.stack is not None:
        return None
    paged = count == 1 and "optimizer" not in job.given_workload
    extra: dict[str, Any] = {"optimizer": "paged-adamw-8bit"} if paged else {}
    lean = resolve_job(
        knowledge,
        replace(workload, config=replace(stated, stack="torchtune"), **extra),
        need_data=False,
    )
    recipe = "its single-device recipe: PagedAdamW8bit" if paged else "its recipe: AdamW"
    note = Assumed(
        text=f"training stack: torchtune ({recipe}, bf16 weights and states, the optimizer stepped in "
        f"backward; the default {job.stack} does not fit on {count} GPU{'s' if count > 1 else ''})",
        note="the fine-tuning recipe made for little memory",
        field="stack",
    )
    assumed = (*(a for a in lean.assumed if a.field != "stack"), note)
    # As the user stated it (the stack is the tool's choice, not theirs), with the recipe's own values.
    return replace(lean, config=stated, assumed=assumed, given_workload=job.given_workload)


def memory_floor_job(workload: Workload, job: Job) -> Job | None:
    """The job with its memory counted at the leanest runtime the catalogue sources, to try when the stack the
    tool assumed fits nothing and the user named none: a refusal then says no stack could run it, which the
    assumed stack alone does not show (runtimes leaner than the typical eager one exist: fused blocks, chunked
    losses, static allocation). Its speed stays the assumed stack's; the answer says it may not fit. None when
    the stack was stated, or for serving or a workload without a transformer shape."""
    if not job.training or workload.config.stack is not None or job.arch is None or job.memory_floor:
        return None
    note = Assumed(
        text=f"memory: counted at the leanest runtime the catalogue sources, as the stack was not stated and "
        f"the assumed {job.stack} fits nothing here: Megatron-Core's fused block, a chunked cross-entropy, "
        "16-bit gradients, no allocator reserve (speed: still the assumed stack's)",
        note="knowledge/assumptions.toml: [activations], [loss.*], allocator_fragmentation's low end",
        field="stack",
    )
    return replace(job, memory_floor=True, assumed=(*job.assumed, note))
