"""Provides Layout: how a job is spread over GPUs (tensor, pipeline, data parallel, sharding, batch)."""

from __future__ import annotations

from dataclasses import dataclass, fields

ZERO_STAGE = {"zero1": 1, "zero2": 2, "zero3": 3}  # module-level: the memory model asks per term, per trial
SHARDING_LABEL = {"none": "", "ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "FSDP/ZeRO-3"}


@dataclass(frozen=True, slots=True, repr=False)
class Layout:
    """One way to place a job on `count` GPUs."""

    count: int
    nodes: int
    node_size: int
    precision: str
    tp: int = 1
    pp: int = 1
    dp: int = 1
    sharding: str = "none"
    """none | ddp | zero1 | zero2 | zero3."""
    recompute: str = "none"
    """none | selective | full."""
    micro_batch: int = 1
    """Sequences (or items) per GPU per micro-batch; concurrent sequences per replica for inference."""
    grad_accum: int = 1
    cp: int = 1
    """Context parallel: ranks that split one sequence."""
    ep: int = 1
    """Expert parallel: ranks (within data parallel) that split the experts of each MoE layer."""
    shard_group: int = 0
    """Hybrid sharding: ZeRO/FSDP shards within groups of this many data-parallel ranks (0: all of them)."""
    virtual: int = 1
    """Interleaved pipeline: model chunks per pipeline rank (1: plain 1F1B)."""

    @property
    def zero(self) -> int:
        """The ZeRO stage (0 for DDP or a single GPU)."""
        return ZERO_STAGE.get(self.sharding, 0)

    @property
    def model_parallel(self) -> int:
        """GPUs holding one copy of the model's dense weights (tp x pp)."""
        return self.tp * self.pp

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel ranks that split each expert: tp where expert parallelism divides the data x
        context parallel ranks; otherwise the experts are folded over the tensor-parallel ranks too (MoE
        parallel folding: expert TP x EP x expert DP = TP x CP x DP, NVIDIA/Megatron-LM@00caa53af309:
        megatron/core/parallel_state.py initialize_model_parallel), with the widest expert TP that fits."""
        return expert_tp(self.tp, self.cp * self.dp, self.ep)

    @property
    def shard_ranks(self) -> int:
        """Ranks the ZeRO/FSDP states are sharded over: data x context parallel, or the hybrid group."""
        return self.shard_group or self.dp * self.cp

    def label(self) -> str:
        """A short human label, e.g. 'TP8 x PP2 x DP4, ZeRO-1' or 'FSDP/ZeRO-3 x16'."""
        parts = []
        if self.tp > 1:
            parts.append(f"TP{self.tp}")
        if self.pp > 1:
            parts.append(f"PP{self.pp}" + (f" (interleaved x{self.virtual})" if self.virtual > 1 else ""))
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        if self.ep > 1:
            folded = self.expert_tp != self.tp
            parts.append(f"EP{self.ep}" + (f" (folded, expert TP {self.expert_tp})" if folded else ""))
        if self.dp > 1 and (parts or self.sharding in ("none", "ddp")):
            parts.append(f"DP{self.dp}")
        text = " x ".join(parts)
        shard = SHARDING_LABEL.get(self.sharding, self.sharding)
        if self.sharding in ("zero1", "zero2", "zero3"):
            if self.shard_group:
                replicas = self.dp * self.cp // self.shard_group
                shard = f"{shard} hybrid (shard {self.shard_group}, replicate {replicas})"
            text = f"{text}, {shard}" if text else f"{shard} x{self.dp}"
        elif not text:
            text = "single GPU" if self.count == 1 else f"DDP x{self.dp}"
        if self.recompute != "none":
            text += f", {self.recompute} recompute"
        return text

    def serving_label(self) -> str:
        """'2 replicas x TP4' for inference plans."""
        shape = (
            f"TP{self.tp}" + (f" x PP{self.pp}" if self.pp > 1 else "") if self.tp * self.pp > 1 else "1 GPU"
        )
        return f"{self.dp} replica{'s' if self.dp != 1 else ''} x {shape}"

    def with_(self, **changes: object) -> Layout:
        """A copy with some fields changed (the search makes many: faster than dataclasses.replace)."""
        return Layout(*[changes[f] if f in changes else getattr(self, f) for f in _FIELDS])  # type: ignore[arg-type]  # field values by name


_FIELDS = tuple(f.name for f in fields(Layout))


def expert_tp(tp: int, ranks: int, ep: int) -> int:
    """Tensor-parallel ranks that split each expert when `ep` expert-parallel ranks run beside `ranks` data x
    context parallel ones (Layout.expert_tp): tp when ep divides them, else the largest divisor of tp whose
    product with ep divides tp x ranks (1 at least, where ep divides that product at all)."""
    if ep <= 1 or ranks % ep == 0:
        return tp
    return next((d for d in range(tp, 0, -1) if tp % d == 0 and (tp * ranks) % (d * ep) == 0), 1)
