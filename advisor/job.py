"""Provides resolve_job(): the user's workload turned into the quantities the models need, defaults named."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.catalog.loader import Knowledge
from advisor.catalog.models import ModelSpec
from advisor.errors import InputError
from advisor.inputs import Workload
from advisor.units import human

# Parameters per layer of a dense transformer ~ 12 d^2 (Kaplan et al. 2020, sec. 2.1); Llama-2 7B/13B
# keep d / layers = 128, which fixes the shape of a custom model from its size alone.
_ASPECT = 128
_CUSTOM_VOCAB = 32000


@dataclass(frozen=True, slots=True)
class Arch:
    """The transformer shape the per-layer memory and FLOP formulas need."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    gated: bool
    vocab: int
    experts: int = 1
    experts_per_token: int = 1

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden // self.heads

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """KV cache per token of context, all layers: 2 (K and V) x layers x kv heads x head dim."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * bytes_per_value

    def lora_params(self, rank: int) -> float:
        """Adapter parameters of rank r on every linear layer of every block (q, k, v, o and the FFN)."""
        h, kv, f = self.hidden, self.kv_heads * self.head_dim, self.ffn_hidden
        attention = (h + h) + 2 * (h + kv) + (h + h)
        ffn = (h + f) * (2 if self.gated else 1) + (f + h)
        return float(self.layers * rank * (attention + ffn * self.experts))


def dense_arch_for(params: float) -> Arch:
    """A generic dense decoder of about `params` parameters (Llama-2-like proportions, MHA, 4x FFN)."""
    hidden = max(_ASPECT, round((params * _ASPECT / 12.0) ** (1 / 3) / _ASPECT) * _ASPECT)
    layers = max(1, round(params / (12.0 * hidden * hidden)))
    heads = hidden // _ASPECT
    return Arch(layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn_hidden=4 * hidden, gated=False,
                vocab=_CUSTOM_VOCAB)


@dataclass(frozen=True)
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
    precision: str = "auto"
    """As asked: 'auto' resolves per GPU to bf16 or fp16."""
    assumed: tuple[str, ...] = field(default=())
    spec: ModelSpec | None = None

    @property
    def is_transformer(self) -> bool:
        """Whether per-layer transformer formulas apply."""
        return self.arch is not None

    @property
    def params_b(self) -> float:
        """Total parameters in billions."""
        return self.params / 1e9


def _arch_of(spec: ModelSpec) -> Arch | None:
    if not spec.is_transformer:
        return None
    return Arch(layers=spec.layers or 0, hidden=spec.hidden or 0, heads=spec.heads or 0,
                kv_heads=spec.kv_heads or spec.heads or 0, ffn_hidden=spec.ffn_hidden or 0, gated=spec.gated_ffn,
                vocab=spec.vocab or _CUSTOM_VOCAB, experts=spec.experts, experts_per_token=spec.experts_per_token)


def transformer_flops_per_token(active_params: float, arch: Arch, seq_len: int) -> float:
    """Forward FLOPs per token: 2N + 4 x layers x hidden x seq (PaLM appendix B's 6N + 12LHQT / 3)."""
    return 2.0 * active_params + 4.0 * arch.layers * arch.hidden * seq_len


def resolve_job(knowledge: Knowledge, workload: Workload, *, need_data: bool = True) -> Job:
    """Resolve a workload against the catalogue, filling every unspecified input from assumptions.toml.

    need_data=False (predictions of throughput) leaves the job's size at 0 instead of asking for it.
    """
    d = knowledge.assumptions.defaults
    assumed: list[str] = []
    spec = knowledge.model(workload.model) if workload.model else None
    if spec is not None:
        arch = _arch_of(spec)
        params, active = spec.params, spec.active
        model_id, name, model_kind = spec.id, spec.name, spec.kind
    else:
        params = float(workload.params or 0)
        arch = dense_arch_for(params)
        active = params
        model_id, name, model_kind = f"custom-{human(params)}", f"custom dense transformer, {human(params)} parameters", "llm"
        assumed.append(f"custom model shape: {arch.layers} layers, hidden {arch.hidden}, {arch.heads} heads, "
                       f"FFN {arch.ffn_hidden}, vocab {arch.vocab} (dense, Llama-2-like proportions)")

    is_llm = model_kind == "llm"
    kind = workload.kind
    if kind is None:
        kind = "finetune" if is_llm and spec is not None else "pretrain"
        assumed.append(f"workload: {kind} (pass --workload)")
    if kind in ("lora", "qlora", "inference") and arch is None:
        raise InputError(f"--workload {kind} needs a transformer model; {model_id!r} is a {model_kind} "
                         "(use pretrain or finetune)")
    training = kind != "inference"

    # Sequence length: the user's, else the workload's own (BERT, ViT), else the model's context or a default.
    if workload.seq_len:
        seq_len = workload.seq_len
    elif spec is not None and spec.seq_len:
        seq_len = spec.seq_len
    elif arch is not None and is_llm:
        default = int(d.llm_seq_len.value)
        seq_len = min(spec.max_seq_len, default) if spec is not None and spec.max_seq_len else default
        if kind != "inference":  # serving sizes by prompt and output tokens instead
            assumed.append(f"sequence length {seq_len} tokens (pass --seq-len)")
    else:
        seq_len = 0

    per_token = is_llm or spec is None
    if per_token:
        fwd = transformer_flops_per_token(active, arch, seq_len) if arch else 0.0
        unit, items_per_seq = "tokens/s", max(seq_len, 1)
        train = 3.0 * fwd
        act_bytes = 0.0
        if spec is not None and spec.train_flops_per_item:  # a measured or derived figure beats the formula
            train = spec.train_flops_per_item
            fwd = spec.forward_flops_per_item or train / 3.0
    else:
        assert spec is not None
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
            fwd = transformer_flops_per_token(active, arch, seq_len) * max(seq_len, 1)
            train = 3.0 * fwd
        act_bytes = spec.activation_bytes_per_item

    rank = workload.lora_rank or int(d.lora_rank.value)
    if kind in ("lora", "qlora") and workload.lora_rank is None:
        assumed.append(f"LoRA rank {rank} on every linear layer (pass --lora-rank)")
    trainable = arch.lora_params(rank) if kind in ("lora", "qlora") and arch else params

    total_items = 0.0
    global_seqs = 0
    if training:
        if workload.tokens is not None:
            if unit != "tokens/s":
                raise InputError(f"--tokens applies to token-based models; {model_id!r} counts {unit}: use --samples")
            total_items = workload.tokens * workload.epochs
        elif workload.samples is not None:
            total_items = workload.samples * workload.epochs * items_per_seq
        elif kind == "pretrain" and per_token and need_data:
            total_items = d.pretrain_tokens_per_param.value * params
            assumed.append(f"{human(total_items)} training tokens = {d.pretrain_tokens_per_param.value:g} per "
                           "parameter, compute-optimal (pass --tokens)")
        elif per_token and need_data:
            total_items = d.finetune_tokens.value * workload.epochs
            assumed.append(f"{human(total_items)} fine-tuning tokens (an Alpaca-sized data set; pass --tokens)")
        elif need_data:
            raise InputError(f"training {model_id!r} needs a data size: --samples N [--epochs E]")
        if per_token and kind == "pretrain":
            global_seqs = max(1, math.ceil(d.pretrain_global_batch_tokens.value / max(seq_len, 1)))
        elif per_token:
            global_seqs = int(d.finetune_global_batch_seqs.value)
        else:
            global_seqs = 0  # non-LLM: every GPU runs its benchmark batch, no accumulation

    prompt = workload.prompt_tokens or int(d.prompt_tokens.value)
    output = workload.output_tokens or int(d.output_tokens.value)
    tpot = workload.tpot_ms or d.tpot_target_ms.value
    rps = workload.requests_per_s or 0.0
    if not training:
        if workload.prompt_tokens is None:
            assumed.append(f"{prompt} prompt tokens per request (pass --prompt-tokens)")
        if workload.output_tokens is None:
            assumed.append(f"{output} output tokens per request (pass --output-tokens)")
        if workload.tpot_ms is None:
            assumed.append(f"latency target {tpot:g} ms per output token (pass --tpot-ms)")
        if workload.requests_per_s is None:
            rps = 1.0
            assumed.append("load 1 request/s (pass --requests-per-s)")
        if arch is not None and spec is not None and spec.max_seq_len and prompt + output > spec.max_seq_len:
            raise InputError(f"--prompt-tokens + --output-tokens = {prompt + output} exceeds {model_id}'s context "
                             f"of {spec.max_seq_len} tokens")

    return Job(
        kind=kind, training=training, model_id=model_id, model_name=name, model_kind=model_kind, params=params,
        active_params=active, arch=arch, seq_len=seq_len, unit=unit, items_per_sequence=items_per_seq,
        fwd_flops_per_item=fwd, train_flops_per_item=train, activation_bytes_per_item=act_bytes,
        total_items=total_items, global_batch_seqs=global_seqs, trainable_params=trainable, lora_rank=rank,
        optimizer=workload.optimizer, batch_size=workload.batch_size, dataset_gb=workload.dataset_gb,
        prompt_tokens=prompt, output_tokens=output, requests_per_s=rps, tpot_ms=tpot, ttft_ms=workload.ttft_ms,
        precision=workload.precision, assumed=tuple(assumed), spec=spec,
    )
