"""Provides ComposedStep: a transformer's training step as the sum of its operations priced from the
measured-operation tables (GEMMs at their per-rank shapes, attention, memory-bound ops, collectives), stage by
stage, the pipeline paced by its slowest stage."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from advisor.catalog.assumptions import Assumptions, Fabric
from advisor.catalog.gpus import Gpu
from advisor.catalog.operations.dispatch import destinations
from advisor.job.layout import Layout, expert_tp
from advisor.job.resolve import Job
from advisor.job.shape import Arch
from advisor.physics.adapters import adapted_modules, peft_prices
from advisor.physics.best_prices import BestPrices
from advisor.physics.op_prices import OpPrices, Price, attention_dtype, gemm_dtype
from advisor.physics.recompute_modules import (
    counted,
    pass_values_per_token,
    recomputes_attention,
    recomputes_ffn,
)

GEMM, ATTN, MEM, HEAD, OPT = "GEMM compute", "attention", "memory-bound", "LM head + loss", "optimizer"
OFFLOAD = "optimizer (CPU offload)"
TP, CPR, EPA, PPS, DPR, BUBBLE = (
    "TP/SP collectives",
    "CP ring",
    "EP all-to-all",
    "PP send/recv",
    "DP gradient reduce",
    "pipeline bubble",
)
COMM = (TP, CPR, EPA, PPS, DPR)
ORDER = (GEMM, ATTN, MEM, HEAD, TP, CPR, EPA, PPS, DPR, BUBBLE, OPT, OFFLOAD)
# Megatron-Core with Transformer Engine overlaps the sequence-parallel all-gathers and reduce-scatters with
# the GEMMs they feed (tp_comm_overlap, userbuffers; "Communication Overlap", Megatron Bridge docs,
# docs.nvidia.com/nemo/megatron-bridge/latest/training/communication-overlap.html, read 2026-12). Its presets
# are tuned for Hopper and later; the share it hides is not published: we assume half, and every other stack
# (and Megatron before Hopper) leaves the TP traffic exposed.
TP_HIDDEN_MEGATRON = 0.5
# The attention kernel a stack runs, where the GPU's rows measured it: Megatron-Core calls Transformer
# Engine's fused attention (cuDNN's on Hopper and later); every other stack FlashAttention-2, from the
# flash-attn package or PyTorch's SDPA, whose flash backend is FlashAttention-2 (PyTorch 2.2 release notes).
# FlashAttention-3 (Hopper-only, a separate build) is what none of the stacks' recipes name. On H100 the three
# differ by up to 1.6x (Shah et al., FlashAttention-3, arXiv:2407.08608, Figures 5-6: FA2, cuDNN, FA3).
MEGATRON_ATTENTION, FLASH_ATTENTION = "cudnn", "fa2"
TP_OVERLAP_FROM_CC = 9.0
# Memory-bound values moved per token per layer in the forward pass, in units of the hidden size (norms:
# 2 x read + write; residual adds: 2 x two reads + one write); the activation and rotary terms are added
# from the layer's own widths. The backward pass moves about twice the forward's bytes (reads the saved input
# and the incoming gradient, writes the outgoing one).
NORM_RESIDUAL_VALUES = 4 + 6
BACKWARD_BYTES = 2.0
# Softmax cross-entropy in FP32 over the local vocabulary: the logits written, read, and their gradient
# written and read again.
LOSS_PASSES = 4
FP32 = 4.0
# Hugging Face's causal-LM loss, for the stacks whose `loss` figure is sourced to hf-loss (HF Trainer,
# DeepSpeed over HF modules, TRL, axolotl, LLaMA-Factory): LlamaForCausalLM.forward (huggingface/
# transformers@002272831fba: src/transformers/models/llama/modeling_llama.py) runs logits.float() (read 2,
# write 4 bytes per logit) and makes the shifted slice contiguous (read 4, write 4) before CrossEntropyLoss;
# backward, the slice's gradient (zeros written 4, the slice copied 4 + 4) and the upcast's (read 4, write 2):
# 32 bytes per logit on top of the softmax cross-entropy's own LOSS_PASSES. (Transformers' later
# loss_utils.ForCausalLMLoss keeps the upcast but shifts the labels instead of the logits: 12 of the 32.)
HF_LOSS_EXTRA_BYTES = 6.0 + 8.0 + 12.0 + 6.0
# The stacks whose routed experts multiply by the gate and the up projection as two GEMMs of the expert's FFN
# width each, not one of twice it: torchtitan's GroupedExperts runs torch._grouped_mm on w1, then on w3, then
# on w2 (pytorch/torchtitan@08dc75aee33a: torchtitan/models/moe/moe.py, _run_experts_grouped_mm), and Hugging
# Face's MoE blocks, which the HF Trainer, TRL, axolotl and LLaMA-Factory train, call an expert's gate_proj
# and up_proj Linears apart (huggingface/transformers@16b6c53c8ec3: src/transformers/models/qwen3_moe/
# modeling_qwen3_moe.py, Qwen3MoeMLP). Megatron-Core's grouped experts hold both in one linear_fc1, twice
# the width under gated_linear_unit (NVIDIA/Megatron-LM: megatron/core/transformer/moe/experts.py).
SPLIT_EXPERT_GATE_STACKS = frozenset({"torchtitan", "hf", "trl", "axolotl", "llama-factory"})


@dataclass(frozen=True, slots=True, repr=False)
class OpShare:
    """One operation class's seconds in a step, and where the figure came from."""

    op: str
    seconds: float
    source: str
    basis: str
    """measured | interpolated | extrapolated | scaled from <gpu> | datasheet fallback (several: joined by
    +)."""
    note: str = ""


@dataclass(frozen=True, slots=True, repr=False)
class _Tail:
    """What follows the slowest stage's micro-batches in a step (its parts are built only when read)."""

    bubble: float
    pp: int
    virtual: int
    label: str
    sends: OpShare | None
    dp: Price
    dp_note: Callable[[], str] = field(compare=False)
    show_dp: bool
    optimizer: Price
    offload: bool = False
    """The optimizer step runs on the host CPU (its line says so)."""

    @property
    def seconds(self) -> float:
        sends = self.sends.seconds if self.sends is not None else 0.0
        return math.fsum((self.bubble, sends, self.dp.seconds, self.optimizer.seconds))

    def parts(self) -> tuple[OpShare, ...]:
        out: list[OpShare] = []
        if self.pp > 1:
            out.append(
                OpShare(
                    BUBBLE,
                    self.bubble,
                    ("interleaved " if self.virtual > 1 else "")
                    + "1F1B schedule: (p - 1) / v idle stage times",
                    "closed form",
                    f"{self.pp - 1} stage times / {self.virtual} chunks, paced by {self.label}",
                )
            )
        if self.sends is not None:
            out.append(self.sends)
        if self.show_dp:
            out.append(
                OpShare(DPR, self.dp.seconds, self.dp.source or "no table row", self.dp.basis, self.dp_note())
            )
        opt = self.optimizer
        if self.offload:
            note = "Adam over the local shard in host memory, then the parameters up over PCIe"
            out.append(OpShare(OFFLOAD, opt.seconds, opt.source, opt.basis, note))
        else:
            out.append(OpShare(OPT, opt.seconds, opt.source, opt.basis, "over the local shard"))
        return tuple(out)


@dataclass(frozen=True, slots=True, repr=False)
class StepOps:
    """A training step by operation class: what each costs on the slowest pipeline stage (m micro-batches,
    its compute scaled by `scale`), then the bubble, the sends, the exposed data-parallel traffic and the
    optimizer step (the tail); the parts add up to total_s. The parts are built when read: a search reads
    only the total of thousands of steps."""

    total_s: float
    slowest_stage: str
    stage: tuple[OpShare, ...]
    """The slowest stage's operations for one micro-batch."""
    m: int
    scale: float
    after: _Tail
    notes: tuple[str, ...] = ()

    @property
    def tail(self) -> tuple[OpShare, ...]:
        """The bubble, the sends, the exposed data-parallel traffic and the optimizer step."""
        return self.after.parts()

    @property
    def parts(self) -> tuple[OpShare, ...]:
        """Every operation class's seconds in the step."""
        m, scale = self.m, self.scale
        own = tuple(
            OpShare(p.op, p.seconds * m * (1.0 if p.op in COMM else scale), p.source, p.basis, p.note)
            for p in self.stage
        )
        return own + self.tail

    @property
    def exposed_comm_s(self) -> float:
        """Communication the step waits for (not hidden under compute)."""
        return sum(p.seconds for p in self.parts if p.op in COMM)

    @property
    def compute_s(self) -> float:
        """GEMMs, attention, memory-bound ops, the head and the optimizer."""
        return sum(p.seconds for p in self.parts if p.op in (GEMM, ATTN, MEM, HEAD, OPT))

    def seconds(self, op: str) -> float:
        """The seconds of one operation class (0 when absent)."""
        return sum(p.seconds for p in self.parts if p.op == op)


class _Acc:
    """Seconds per operation class with the sources and bases of their rates."""

    __slots__ = ("bases", "notes", "seconds", "sources")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.sources: dict[str, set[str]] = {}
        self.bases: dict[str, set[str]] = {}
        self.notes: dict[str, str] = {}

    def add(self, op: str, price: Price, times: float = 1.0) -> None:
        self.seconds[op] = self.seconds.get(op, 0.0) + price.seconds * times
        if price.source:
            self.sources.setdefault(op, set()).add(price.source)
        self.bases.setdefault(op, set()).add(price.basis)

    def merge(self, other: _Acc, times: float = 1.0) -> None:
        for op, s in other.seconds.items():
            self.seconds[op] = self.seconds.get(op, 0.0) + s * times
            self.sources.setdefault(op, set()).update(other.sources.get(op, ()))
            self.bases.setdefault(op, set()).update(other.bases.get(op, ()))
        for op, n in other.notes.items():
            self.notes.setdefault(op, n)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def shares(self, times: float) -> list[OpShare]:
        return [
            OpShare(
                op,
                self.seconds[op] * times,
                "; ".join(sorted(self.sources.get(op, ()))) or "no table row",
                "+".join(sorted(self.bases.get(op, ()))),
                self.notes.get(op, ""),
            )
            for op in ORDER
            if op in self.seconds
        ]


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _Stage:
    """The slowest stage of a pipeline split for one micro-batch: its operations, which it is, its compute
    and its exposed communication."""

    shares: tuple[OpShare, ...]
    label: str
    compute: float
    comm: float


@dataclass(frozen=True, slots=True, repr=False)
class _Shape:
    """What one layer's operations depend on."""

    precision: str
    tp: int
    cp: int
    mb: int
    recompute: str
    ep: int
    node_size: int
    etp: int = 0
    """Tensor-parallel ranks splitting each expert where expert parallelism folds over the tensor-parallel
    ranks (Layout.expert_tp); 0: tp."""

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel ranks splitting each expert."""
        return self.etp or self.tp


class ComposedStep:
    """The composed training step of one transformer job on one GPU type and fabric; every layer's operations
    priced once per (shape, tp, cp, micro-batch, precision, recomputation) and every stage once per pipeline
    split, so a search's thousands of layouts reuse them."""

    def __init__(
        self,
        job: Job,
        gpu: Gpu,
        fabric: Fabric,
        a: Assumptions,
        traits: tuple[float, float, float, float] = (1.0, 1.0, 0.0, 0.0),
        attention: str | None = None,
        sequence_parallel: bool = False,
    ) -> None:
        assert job.arch is not None
        self.job, self.arch, self.gpu, self.a = job, job.arch, gpu, a
        key = next((name for name, f in a.fabric.items() if f == fabric), gpu.fabric)
        self.flash = bool(traits[0]) and gpu.features.flash_attention
        self.megatron = bool(traits[3])
        # Sequence-parallel TP: Megatron's, or PyTorch DTensor's (torchtitan's plan: SequenceParallel norms,
        # the input gathered before each column-parallel block and scattered after each row-parallel one;
        # pytorch/torchtitan@81c1243395b4: torchtitan/models/llama3/infra/parallelize.py).
        self.sp = self.megatron or sequence_parallel
        self.hf_loss = _hf_loss(job, a)
        # The attention kernel a run states (a measured run's software) before the stack's usual one.
        kernel = attention or (MEGATRON_ATTENTION if self.megatron else FLASH_ATTENTION)
        self.prices = OpPrices(gpu, key, getattr(job, "profile", None), kernel)
        overlap = self.megatron and gpu.compute_capability_value >= TP_OVERLAP_FROM_CC
        self.tp_hidden = TP_HIDDEN_MEGATRON if overlap else 0.0
        self.frozen = job.kind in ("lora", "qlora")
        # PEFT's fp32 adapters where the stack's own memory entry keeps them (peft-fp32-adapters; a stack
        # without an entry, FSDP or in-house, is not assumed to train through PEFT): their passes (_peft).
        stack = a.stack.get(job.stack) if job.stack else None
        self.peft_fp32 = self.frozen and stack is not None and stack.peft_fp32_adapters
        # DeepSpeed's own context (sequence) parallelism is Ulysses: heads, not sequence chunks, split the
        # attention (deepspeedai/DeepSpeed@25493c74bfbb: deepspeed/sequence/layer.py, DistributedAttention).
        self.ulysses = job.stack == "deepspeed"
        self.split_gate = job.stack in SPLIT_EXPERT_GATE_STACKS
        self._layers: dict[tuple[_Shape, bool], _Acc] = {}
        self._heads: dict[_Shape, tuple[_Acc, _Acc]] = {}
        self._stages: dict[tuple[_Shape, tuple[tuple[int, int], ...]], _Stage] = {}
        self._counts: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {}
        self._sends: dict[tuple[object, ...], OpShare] = {}
        self._by_layout: dict[tuple[object, ...], _Stage] = {}
        self._floors: dict[tuple[object, ...], float] = {}
        self._best: dict[frozenset[int], ComposedStep] = {}

    # --- one layer ------------------------------------------------------------------------------------------
    def layer(self, s: _Shape, moe: bool) -> _Acc:
        """One layer's forward, backward and recomputation on one rank for one micro-batch (memoised)."""
        key = (s, moe)
        got = self._layers.get(key)
        if got is None:
            got = self._layers[key] = self._layer(s, moe)
        return got

    def _layer(self, s: _Shape, moe: bool) -> _Acc:
        arch, p = self.arch, self.prices
        acc = _Acc()
        tokens = max(1, self.job.seq_len // s.cp) * s.mb
        dt = gemm_dtype(s.precision)
        act = 2.0 if s.precision not in ("fp32", "tf32") else 4.0
        fwd_again = 1.0 if s.recompute == "full" else 0.0
        for m, n, k, count in _gemms(arch, tokens, s.tp, s.ep, moe, s.expert_tp, self.split_gate):
            fwd = p.gemm(dt, m, n, k)
            acc.add(GEMM, fwd, count * (1.0 + fwd_again))
            acc.add(GEMM, p.gemm(dt, m, k, n), count)  # data gradient
            if not self.frozen:
                acc.add(GEMM, p.gemm(dt, k, n, m), count)  # weight gradient
        self._attention(acc, s, tokens)
        self._memory_bound(acc, s, tokens, act, moe, 1.0 + fwd_again)
        if moe:
            self._permute(acc, s, tokens, act, 1.0 + fwd_again)
        self._tp_comm(acc, s, tokens * arch.hidden * act, fwd_again)
        if moe and s.ep > 1:
            self._ep_comm(acc, s, tokens, act, 2.0 + fwd_again)
        if s.recompute == "selective" and self.job.config.recompute_modules:
            self._recomputed_modules(acc, s, tokens, act, moe)
        if self.peft_fp32:
            self._peft(acc, s, tokens, act, moe, 1.0 + fwd_again)
        if self.job.kind == "qlora":
            local = _layer_params(arch, moe, s.tp, s.ep)
            # NF4 base weights read and dequantised to 16-bit for every pass that multiplies by them:
            # bitsandbytes' MatMul4Bit runs dequantize_4bit in its forward and again in its backward, into a
            # fresh 16-bit tensor the GEMM then reads (bitsandbytes-foundation/bitsandbytes@60a0d8a5084f:
            # bitsandbytes/autograd/_functions.py); a recomputed forward dequantises once more.
            acc.add(MEM, p.memory(local * (0.5 + 2.0), local * 2.0), 2.0 + fwd_again)
        return acc

    def _peft(self, acc: _Acc, s: _Shape, tokens: int, act: float, moe: bool, fwd_passes: float) -> None:
        """What PEFT's LoRA layers add on one layer where the stack trains through PEFT
        (advisor/physics/adapters.py): LoRA's fp32 casts of each adapted input, QLoRA's clone of the 4-bit
        base's output."""
        gemms = _gemms(self.arch, tokens, s.tp, s.ep, moe, s.expert_tp)
        modules = adapted_modules(self.arch, gemms, moe, self.job.lora_targets)
        for price, times in peft_prices(self.prices, modules, self.job.kind, act, fwd_passes):
            acc.add(MEM, price, times)

    def _recomputed_modules(self, acc: _Acc, s: _Shape, tokens: int, act: float, moe: bool) -> None:
        """What Megatron-Core's recompute modules (--recompute-modules; advisor/physics/recompute_modules.py)
        run again in backward on one layer: the dense MLP's or the MoE layer's (or its shared experts')
        forward GEMMs and activation pass, a whole MoE layer's permutation and expert-parallel dispatch and
        combine, and the memory-bound passes of the recomputed norms (a MoE layer's pre-MLP norm, multi-latent
        attention's input norm: read the input, write the output) and expert activation (read 2f, write f)."""
        arch, p = self.arch, self.prices
        modules = counted(self.job.config.recompute_modules or ())
        gemms = _gemms(arch, tokens, s.tp, s.ep, moe, s.expert_tp, self.split_gate)
        whole = recomputes_ffn(modules, moe)
        again = gemms[2:] if whole else (gemms[5:] if moe and "shared_experts" in modules else [])
        for m, n, k, count in again:
            acc.add(GEMM, p.gemm(gemm_dtype(s.precision), m, n, k), count)
        values = pass_values_per_token(arch, modules, moe, s.tp, self.sp)
        if values:
            acc.add(MEM, self.prices.memory(values * tokens * act, tokens * arch.hidden * act))
        if moe and whole:
            self._permute(acc, s, tokens, act, 0.0)
        if moe and whole and s.ep > 1:  # dispatch and combine again (the forward once), as _layer prices them
            self._ep_comm(acc, s, tokens, act, 1.0)

    def _ep_comm(self, acc: _Acc, s: _Shape, tokens: int, act: float, passes: float) -> None:
        """The expert-parallel exchange of one layer by the job's dispatcher (Megatron-Core's
        --moe-token-dispatcher-type; NVIDIA/Megatron-LM@d98e8a64ddf3:megatron/core/transformer/moe/README.md,
        token_dispatcher.py): dispatch and combine, `passes` times (forward and backward: 2, and one more each
        time the forward is recomputed)."""
        arch, p = self.arch, self.prices
        # An expert-parallel group strides over the expert TP ranks only (Megatron-Core's expert rank order
        # etp-ep-dp-pp, context parallelism folded into it: NVIDIA/Megatron-LM@d98e8a64ddf3:megatron/core/
        # parallel_state.py, expert_decoder_rank_generator; torchtitan's sparse mesh ends in ep).
        span = s.ep * s.expert_tp
        nodes = max(1, math.ceil(span / s.node_size))
        own = tokens * arch.hidden * act / s.tp  # the rank's own (sequence-parallel) tokens
        kind = self.job.moe_dispatcher
        if kind == "allgather":
            # MoEAllGatherTokenDispatcher: every token gathered to every rank of the TP x EP group, the
            # experts' outputs reduce-scattered back; the backward pass runs the pair the other way.
            whole = own * span
            pair = p.collective("all_gather", span, nodes, whole).seconds
            pair += p.collective("reduce_scatter", span, nodes, whole).seconds
            src = p.collective("all_gather", span, nodes, whole)
            acc.add(EPA, Price(pair, src.source, src.basis), passes)
            acc.notes[EPA] = (
                f"allgather dispatcher: all-gather + reduce-scatter of every token over {span} ranks"
            )
        elif kind == "deepep":
            # DeepEP sends a token once to each server its experts are on (once to each rank inside one
            # server) and forwards it over NVLink there (deepseek-ai/DeepEP@dd758caf4518:docs/legacy.md).
            groups = nodes if nodes > 1 else s.ep
            reach = destinations(arch.experts, arch.experts_per_token, groups)
            nbytes = own * reach
            one = p.deepep("dispatch", s.ep, nodes, nbytes)
            both = one.seconds + p.deepep("combine", s.ep, nodes, nbytes).seconds
            acc.add(EPA, Price(both, one.source, one.basis), passes)
            where = "servers" if nodes > 1 else "ranks"
            acc.notes[EPA] = f"DeepEP: each token sent once to each of {reach:.2f} {where} (of {groups})"
        else:
            routed = own * arch.experts_per_token
            acc.add(EPA, p.collective("all_to_all", s.ep, nodes, routed), 2.0 * passes)

    def _attention(self, acc: _Acc, s: _Shape, tokens: int) -> None:
        arch, p = self.arch, self.prices
        ulysses = self.ulysses and s.cp > 1
        split = s.tp * s.cp if ulysses else s.tp  # Ulysses: the whole sequence, cp times fewer heads
        heads = max(1, arch.heads // split)
        kv = max(1, -(-arch.kv_heads // split))
        seq = self.job.seq_len if ulysses else max(1, self.job.seq_len // s.cp)
        again = {"full": 1.0, "selective": 1.0}.get(s.recompute, 0.0)
        if s.recompute == "selective" and not recomputes_attention(self.job.config.recompute_modules):
            again = 0.0  # recompute modules stated without the attention core
        if self.flash:
            fwd, bwd = p.attention(attention_dtype(s.precision), seq, heads, kv, arch.head_dim, s.mb)
            # A context-parallel rank's queries meet every rank's keys: cp x the FLOPs of its own chunk,
            # halved by causality across chunks as within one (load-balanced ring attention).
            ring = 1.0 if ulysses else float(s.cp)
            acc.add(ATTN, fwd, ring * (1.0 + again))
            acc.add(ATTN, bwd, ring)
        else:
            # Eager attention: the scores and the weighted values as batched GEMMs over every head and
            # sequence (QK^T and PV forward; two each backward), the whole s x s square computed, and the
            # scores through memory with a fused softmax (forward: written, read; backward: three passes).
            dt = gemm_dtype(s.precision)
            full = self.job.seq_len
            rows = seq * heads * s.mb
            value = 2.0 if s.precision not in ("fp32", "tf32") else 4.0
            scores_gemm = p.thin_gemm(dt, rows, full, arch.head_dim, value)
            values_gemm = p.thin_gemm(dt, rows, arch.head_dim, full, value)
            for gemm in (scores_gemm, values_gemm):
                acc.add(ATTN, gemm, 1.0 + again + 2.0)
            scores = heads * s.mb * seq * full * 2.0
            acc.add(MEM, p.memory(scores, scores), 2.0 * (1.0 + again) + 3.0)
        if ulysses:
            self._ulysses_comm(acc, s, tokens, 1.0 + again)
        elif s.cp > 1:
            kv_bytes = arch.kv_values_per_token_layer(s.tp) * tokens * 2.0
            nodes = max(1, math.ceil(s.cp * s.tp / s.node_size))
            ring_s = p.collective("send_recv", 2, nodes, kv_bytes).seconds * (s.cp - 1) * 3.0
            hidden_under = acc.seconds.get(ATTN, 0.0)
            exposed = max(0.0, ring_s - hidden_under)  # overlapped with the attention of the same layer
            acc.add(CPR, Price(exposed, p.collective("send_recv", 2, nodes, kv_bytes).source, "measured"))

    def _ulysses_comm(self, acc: _Acc, s: _Shape, tokens: int, fwd_passes: float) -> None:
        """DeepSpeed-Ulysses: q, k and v all-to-all over the cp ranks before attention and its output back
        after, each pass (forward, recomputed forward, and the same four on the gradients backward); exposed:
        the attention waits on them."""
        arch, p = self.arch, self.prices
        act = 2.0 if s.precision not in ("fp32", "tf32") else 4.0
        q = arch.heads * arch.head_dim / s.tp * tokens * act
        kv = arch.kv_heads * arch.head_dim / s.tp * tokens * act
        nodes = max(1, math.ceil(s.cp * s.tp / s.node_size))
        one = p.collective("all_to_all", s.cp, nodes, q)
        seconds = 2.0 * one.seconds + 2.0 * p.collective("all_to_all", s.cp, nodes, kv).seconds
        acc.add(CPR, Price(seconds, one.source, one.basis), fwd_passes + 1.0)
        acc.notes[CPR] = f"Ulysses: 4 all-to-alls of q/k/v/o over {s.cp} ranks per layer per pass"

    def _memory_bound(
        self, acc: _Acc, s: _Shape, tokens: int, act: float, moe: bool, fwd_passes: float
    ) -> None:
        arch = self.arch
        # Sequence parallelism (Megatron's, torchtitan's DTensor plan) splits the norms and residual adds over
        # the TP ranks; elsewhere every TP rank repeats them on the whole sequence.
        split = s.tp if self.sp else 1
        width = (
            arch.expert_ffn * arch.experts_per_token + arch.expert_ffn * arch.shared_experts
            if moe
            else arch.ffn_hidden
        )
        activation = (3.0 if arch.gated else 2.0) * width / s.tp
        rotary = 2.0 * (arch.heads + arch.kv_heads) * arch.head_dim / s.tp
        values = NORM_RESIDUAL_VALUES * arch.hidden / split + activation + rotary
        fwd_bytes = values * tokens * act
        price = self.prices.memory(fwd_bytes, tokens * arch.hidden * act)
        acc.add(MEM, price, fwd_passes + BACKWARD_BYTES)

    def _permute(self, acc: _Acc, s: _Shape, tokens: int, act: float, fwd_passes: float) -> None:
        """The routed tokens' permutation around the experts (Megatron-Core's all-to-all dispatcher: permute,
        all-to-all, sort the chunks by local expert; then sort back, all-to-all, unpermute with the routing
        weights), a copy of every routed token each way: memory-bound, priced at the measured bandwidth."""
        arch = self.arch
        # Each rank routes its own 1 / (tp / expert TP) of the tokens (sequence parallel) when the experts are
        # split fewer ways than the attention.
        tokens = max(1, tokens * s.expert_tp // s.tp)
        routed = tokens * arch.experts_per_token
        local = max(1, arch.experts // s.ep)
        sorts = 2.0 if s.ep > 1 and local > 1 else 0.0
        # permute reads the tokens and writes top_k copies; unpermute reads them back and writes the sum;
        # each chunk sort reads and writes every routed copy.
        values = 2.0 * (tokens + routed) + 2.0 * sorts * routed
        nbytes = values * arch.hidden * act
        price = self.prices.memory(nbytes, routed * arch.hidden * act)
        # The backward pass permutes the gradients the same way (one pass of the same bytes).
        acc.add(MEM, price, fwd_passes + 1.0)

    def _tp_comm(self, acc: _Acc, s: _Shape, nbytes: float, fwd_again: float) -> None:
        if s.tp <= 1:
            return
        p = self.prices
        # A TP group wider than a server (stated only: the search keeps TP inside the NVLink domain) runs its
        # collectives over the servers' network.
        nodes = max(1, math.ceil(s.tp / s.node_size))

        def coll(op: str) -> Price:
            # Inside one server a PCIe board's collectives run peer-to-peer (OpPrices.in_server).
            return p.collective(op, s.tp, nodes, nbytes) if nodes > 1 else p.in_server(op, s.tp, nbytes)

        if self.sp:  # sequence parallel: an all-gather and a reduce-scatter where TP all-reduces
            one, other = coll("all_gather"), coll("reduce_scatter")
            per_pass = Price(2.0 * (one.seconds + other.seconds), one.source, one.basis)
        else:
            per_pass = coll("all_reduce")
            per_pass = Price(2.0 * per_pass.seconds, per_pass.source, per_pass.basis)
        passes = 2.0 + fwd_again  # forward, backward, and the recomputed forward
        acc.add(TP, per_pass, passes * (1.0 - self.tp_hidden))
        acc.notes[TP] = (
            f"{4 if self.sp else 2} {'AG/RS' if self.sp else 'all-reduce'} of "
            f"{nbytes / 2**20:,.0f} MiB "
            f"per layer per pass, {self.tp_hidden:.0%} hidden under GEMMs"
        )

    def tp_floor(self, precision: str, tp: int, pp: int, cp: int, recompute: str, virtual: int) -> float:
        """Seconds of exposed TP/SP traffic one sequence (micro-batch 1) can never beat on any stage: the
        fewest layers a stage holds, latency-free, at the best bus bandwidth of any message size. The real
        traffic of a micro-batch of b sequences is at least b times it (the search's lower bound)."""
        if tp <= 1:
            return 0.0
        p, arch = self.prices, self.arch
        act = 2.0 if precision not in ("fp32", "tf32") else 4.0
        nbytes = max(1, self.job.seq_len // cp) * arch.hidden * act
        share = (tp - 1) / tp
        if self.sp:
            gather, scatter = p.best_in_server("all_gather", tp), p.best_in_server("reduce_scatter", tp)
            per_pass = 2.0 * share * nbytes * (1.0 / gather + 1.0 / scatter)
        else:
            per_pass = 2.0 * 2.0 * share * nbytes / p.best_in_server("all_reduce", tp)
        passes = 2.0 + (1.0 if recompute == "full" else 0.0)
        sizes = chunk_sizes(arch.layers, pp * virtual)
        fewest = min(sum(sizes[stage::pp]) for stage in range(pp))
        return fewest * per_pass * passes * (1.0 - self.tp_hidden)

    def compute_floor(
        self, precision: str, tp: int, pp: int, cp: int, ep: int, recompute: str, virtual: int, node: int
    ) -> float:
        """Seconds of one sequence's compute on the slowest stage that no micro-batch beats: each stage's
        operations at the best rates the tables give any micro-batch (best_prices), the largest of the
        stages; the paced stage of a micro-batch of b sequences takes at least b times it (a search's
        bound). Memoised per shape."""
        key = (precision, tp, pp, cp, ep, recompute, virtual, node)
        got = self._floors.get(key)
        if got is None:
            s = _Shape(precision, tp, cp, 1, recompute, ep, node, _shape_etp(tp, ep))
            tokens = max(1, self.job.seq_len // cp)
            arch = self.arch
            routed = tokens * s.expert_tp // tp * arch.experts_per_token
            per_expert = max(1, routed * ep // arch.experts) if arch.is_moe else 0
            scales = frozenset({tokens, per_expert})
            best = self._best.get(scales)
            if best is None:  # this step on the best-rate prices, its own layer memo shared by the shapes
                best = self._best[scales] = object.__new__(ComposedStep)
                best.__dict__.update(self.__dict__)
                best.prices = BestPrices(self.prices, scales)  # type: ignore[assignment]
                best._layers, best._heads, best._stages, best._by_layout = {}, {}, {}, {}
            got = self._floors[key] = max(best._stage_totals(s, pp, virtual)[0])
        return got

    # --- the embedding, the LM head and the loss ------------------------------------------------------------
    def ends(self, s: _Shape) -> tuple[_Acc, _Acc]:
        """The first stage's embedding and the last stage's LM head and loss, per micro-batch (memoised)."""
        got = self._heads.get(s)
        if got is None:
            got = self._heads[s] = self._ends(s)
        return got

    def _ends(self, s: _Shape) -> tuple[_Acc, _Acc]:
        arch, p = self.arch, self.prices
        tokens = max(1, self.job.seq_len // s.cp) * s.mb
        act = 2.0 if s.precision not in ("fp32", "tf32") else 4.0
        first, last = _Acc(), _Acc()
        emb = tokens * arch.hidden * act
        first.add(MEM, p.memory(emb, emb), 1.0 + BACKWARD_BYTES)  # gather, and the gradient's scatter-add
        vocab = max(1, arch.vocab // s.tp)
        dt = gemm_dtype(s.precision)
        last.add(HEAD, p.gemm(dt, tokens, vocab, arch.hidden), 1.0)
        last.add(HEAD, p.gemm(dt, tokens, arch.hidden, vocab), 1.0)
        if not self.frozen:
            last.add(HEAD, p.gemm(dt, arch.hidden, vocab, tokens), 1.0)
        logits = tokens * vocab * FP32
        last.add(HEAD, p.memory(logits, logits), LOSS_PASSES)
        if self.hf_loss:
            last.add(HEAD, p.memory(tokens * vocab * HF_LOSS_EXTRA_BYTES, logits))
        return first, last

    # --- stages and the step -------------------------------------------------------------------------------
    def slowest_stage(self, s: _Shape, pp: int, virtual: int) -> _Stage:
        """The pipeline stage that sets the pace (memoised on the layers each stage holds: the schedules that
        split them alike share it): its operations for one micro-batch, and which it is."""
        key = (s, self.layer_counts(pp, virtual))
        got = self._stages.get(key)
        if got is None:
            got = self._stages[key] = self._slowest(s, pp, virtual)
        return got

    def layer_counts(self, pp: int, virtual: int) -> tuple[tuple[int, int], ...]:
        """Each pipeline stage's dense and MoE layers (chunk_sizes, chunk c on stage c mod pp; memoised)."""
        key = (pp, virtual)
        got = self._counts.get(key)
        if got is None:
            arch = self.arch
            counts = [[0, 0] for _ in range(pp)]
            start = 0
            for c, size in enumerate(chunk_sizes(arch.layers, pp * virtual)):
                moe = max(0, start + size - max(start, arch.dense_layers)) if arch.is_moe else 0
                counts[c % pp][0] += size - moe
                counts[c % pp][1] += moe
                start += size
            got = self._counts[key] = tuple((d, e) for d, e in counts)
        return got

    def _stage_totals(
        self, s: _Shape, pp: int, virtual: int
    ) -> tuple[list[float], tuple[tuple[int, int], ...]]:
        """Each pipeline stage's seconds for one micro-batch, and its dense and MoE layer counts."""
        first, last = self.ends(s)
        counts = self.layer_counts(pp, virtual)
        dense_s = self.layer(s, False).total
        moe_s = self.layer(s, True).total if any(moe for _, moe in counts) else 0.0
        totals = [d * dense_s + e * moe_s for d, e in counts]
        totals[0] += first.total
        totals[-1] += last.total
        return totals, counts

    def _slowest(self, s: _Shape, pp: int, virtual: int) -> _Stage:
        # The stages' totals first (a merged stage is built for the slowest only: the search asks hundreds).
        totals, counts = self._stage_totals(s, pp, virtual)
        first, last = self.ends(s)
        i = max(range(pp), key=lambda j: (totals[j], j))
        acc = _Acc()
        for flag, n in ((False, counts[i][0]), (True, counts[i][1])):
            if n:
                acc.merge(self.layer(s, flag), float(n))
        if i == 0:
            acc.merge(first)
        if i == pp - 1:
            acc.merge(last)
        if pp == 1:
            label = "the only stage"
        elif i == pp - 1:
            label = "the last stage (its layers, the LM head and the loss)"
        else:
            label = f"stage {i + 1} of {pp}"
        comm = sum(acc.seconds.get(op, 0.0) for op in COMM)
        return _Stage(tuple(acc.shares(1.0)), label, acc.total - comm, comm)

    def stage_of(self, key: tuple[str, int, int, int, str, int, int, int, int], etp: int = 0) -> _Stage:
        """The slowest stage of (precision, tp, cp, micro-batch, recompute, ep, server size, pp, chunks per
        stage), memoised (`etp`: the expert TP of experts folded over the tensor-parallel ranks)."""
        memo = (*key, etp) if etp else key
        stage = self._by_layout.get(memo)
        if stage is None:
            s = _Shape(*key[:7], etp)
            stage = self._by_layout[memo] = self.slowest_stage(s, key[7], key[8])
        return stage

    def stage_seconds(self, key: tuple[str, int, int, int, str, int, int, int, int]) -> float:
        """One micro-batch on the slowest stage (stage_of's key): its compute at the tables' rates and its
        exposed communication. A step of m micro-batches takes at least (m + (p - 1) / v) times it, as its
        compute is never taken below the tables' rates (a search's bound of one trial)."""
        stage = self.stage_of(key, _shape_etp(key[1], key[5]))
        return stage.compute + stage.comm

    def step(
        self,
        layout: Layout,
        floor_s: float,
        dp: Callable[[float], Price],
        optimizer: Price,
        dp_note: Callable[[], str] = str,
        offload: bool = False,
    ) -> StepOps:
        """The step of one layout: m micro-batches on the slowest stage, the bubble of (p - 1) / v of them,
        the pipeline's sends, the exposed data-parallel reduction and the optimizer step. `floor_s` is the
        per-micro-batch stage time no stage can beat (the job's FLOPs at peak over the stages), `dp` the
        exposed data-parallel traffic given the step's compute (`dp_note` says what it is, asked only when
        the parts are read; `offload`: the optimizer step runs on the host CPU)."""
        stage = self.stage_of(
            (
                layout.precision,
                layout.tp,
                layout.cp,
                layout.micro_batch,
                layout.recompute,
                layout.ep,
                layout.node_size,
                layout.pp,
                layout.virtual,
            ),
            layout.expert_tp if layout.expert_tp != layout.tp else 0,
        )
        m = layout.grad_accum
        compute, comm = stage.compute, stage.comm
        # No stage computes faster than its share of the job's FLOPs at peak: the search's bounds rest on it.
        scale = floor_s / compute if compute > 0 and floor_s > compute else 1.0
        notes: tuple[str, ...] = ()
        if scale > 1.0:
            notes = ("stage compute raised to the job's FLOPs at peak (the tables price it faster)",)
        paced = compute * scale + comm
        pp = layout.pp
        bubble = paced * (pp - 1) / layout.virtual if pp > 1 else 0.0
        sends = self._p2p(layout, m) if pp > 1 else None
        exposed = dp(paced * m)
        show = exposed.seconds > 0 or layout.dp * layout.cp > 1
        label = stage.label
        tail = _Tail(bubble, pp, layout.virtual, label, sends, exposed, dp_note, show, optimizer, offload)
        return StepOps(paced * m + tail.seconds, stage.label, stage.shares, m, scale, tail, notes)

    def _p2p(self, layout: Layout, m: int) -> OpShare:
        """Activations forward and their gradients back at each stage boundary, every micro-batch and
        chunk (memoised on what it reads of the layout)."""
        return self.sends(
            (
                layout.precision,
                layout.tp,
                layout.cp,
                layout.dp,
                layout.micro_batch,
                layout.node_size,
                layout.nodes > 1,
                layout.virtual,
                m,
            )
        )

    def sends(self, key: tuple[str, int, int, int, int, int, bool, int, int]) -> OpShare:
        """A pipeline's sends of a step (_p2p) by (precision, tp, cp, dp, micro-batch, server size, more than
        one server, chunks per stage, micro-batches), memoised: a search's bound of one trial reads it."""
        got = self._sends.get(key)
        if got is None:
            got = self._sends[key] = self._send(*key)
        return got

    def _send(
        self, precision: str, tp: int, cp: int, dp: int, mb: int, node_size: int, across: bool, v: int, m: int
    ) -> OpShare:
        tokens = max(1, self.job.seq_len // cp) * mb
        act = 2.0 if precision not in ("fp32", "tf32") else 4.0
        msg = tokens * self.arch.hidden * act / tp
        stride = tp * cp * dp
        nodes = 2 if stride >= node_size and across else 1
        one = self.prices.collective("send_recv", 2, nodes, msg)
        return OpShare(
            PPS,
            2.0 * m * v * one.seconds,
            one.source,
            one.basis,
            f"{msg / 2**20:,.0f} MiB per send, {'across' if nodes > 1 else 'within'} servers",
        )


def _hf_loss(job: Job, a: Assumptions) -> bool:
    """Whether the job's stack computes its loss as Hugging Face's causal-LM head does (the fp32 upcast and a
    contiguous shifted copy before an unchunked cross-entropy): its `loss` figure is sourced to hf-loss."""
    stack = a.stack.get(job.stack) if job.stack else None
    figure = a.loss.get(stack.loss) if stack is not None else None
    return figure is not None and figure.source == "hf-loss"


def chunk_sizes(layers: int, chunks: int) -> list[int]:
    """The transformer layers of each pipeline chunk (chunk c runs on stage c mod pp; interleaved: v chunks
    per stage), as Megatron splits them: evenly; where they do not divide but the layers plus the embedding
    and the loss do, those two count as a layer each, so that the first and the last chunk hold one layer
    fewer (Megatron-LM's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split,
    as Megatron Bridge's Llama 3.1 405B and Qwen3 235B recipes split 126 and 94 layers; torchtitan's default
    split weighs them so too); otherwise the first chunks one layer larger."""
    if layers % chunks and chunks > 1 and (layers + 2) % chunks == 0:
        size = (layers + 2) // chunks
        return [size - 1, *([size] * (chunks - 2)), size - 1]
    return [layers // chunks + (1 if c < layers % chunks else 0) for c in range(chunks)]


def _shape_etp(tp: int, ep: int) -> int:
    """The _Shape's etp of every layout at this tp and ep (0: the experts split tp ways, as the attention):
    Layout.expert_tp does not depend on the data-parallel size (whole experts wherever EP runs), so a search's
    bounds price the same GEMMs and all-to-all span as the layouts they bound."""
    etp = expert_tp(tp, ep, ep)  # ranks = ep: any data x context parallel size EP divides
    return etp if etp != tp else 0


def _gemms(
    arch: Arch, tokens: int, tp: int, ep: int, moe: bool, etp: int = 0, split_gate: bool = False
) -> list[tuple[int, int, int, int]]:
    """A layer's forward GEMMs on one rank as (m, n, k, how many): QKV, attention out, the FFN (gated: up and
    gate in one), or the routed experts' and shared experts' FFNs and the router. Experts folded over the
    tensor-parallel ranks (`etp` < tp) are split etp ways, each rank routing its 1 / (tp / etp) of the
    tokens (sequence parallel): the same FLOPs as unfolded, at a narrower m and a wider n. `split_gate`: a
    gated expert's gate and up projections are two GEMMs of its width (SPLIT_EXPERT_GATE_STACKS), in the up
    GEMM's place (the list's order is what adapters and recomputation index)."""
    hd = arch.head_dim
    q = arch.heads * hd // tp
    kv = max(1, -(-arch.kv_heads // tp)) * hd
    h = arch.hidden
    out = [(tokens, q + 2 * kv, h, 1), (tokens, h, q, 1)]
    up = 2 if arch.gated else 1
    if not moe:
        f = max(1, arch.ffn_hidden // tp)
        return [*out, (tokens, up * f, h, 1), (tokens, h, f, 1)]
    etp = etp or tp
    f = max(1, arch.expert_ffn // etp)
    local = max(1, arch.experts // ep)
    per_expert = max(1, tokens * etp // tp * arch.experts_per_token * ep // arch.experts)
    first = (per_expert, f, h, up * local) if split_gate else (per_expert, up * f, h, local)
    out += [first, (per_expert, h, f, local), (tokens, arch.experts, h, 1)]
    if arch.shared_experts:
        fs = max(1, arch.expert_ffn // tp) * arch.shared_experts
        out += [(tokens, up * fs, h, 1), (tokens, h, fs, 1)]
    return out


def _layer_params(arch: Arch, moe: bool, tp: int, ep: int) -> float:
    """Weights of one layer on one rank."""
    hd = arch.head_dim
    attention = arch.hidden * (2 * arch.heads * hd + 2 * arch.kv_heads * hd) / tp
    if not moe:
        return attention + arch.ffn_params(arch.ffn_hidden) / tp
    experts = arch.experts / ep + arch.shared_experts
    return attention + experts * arch.ffn_params(arch.expert_ffn) / tp
