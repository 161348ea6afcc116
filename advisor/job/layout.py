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
        """Tensor-parallel ranks that split each expert: 1 wherever expert parallelism runs (the experts whole
        on each rank, the expert-parallel group over adjacent ranks; `expert_tp` below says whose recipes)."""
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
            parts.append(f"EP{self.ep}" + (f" (expert TP {self.expert_tp})" if folded else ""))
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
    context parallel ones (Layout.expert_tp): 1, the experts whole on each rank, wherever expert parallelism
    runs (ep > 1 dividing tp x ranks), as the stacks run their MoE models. Megatron-Core's MoE parallel
    folding gives the experts their own groups (expert TP x EP x expert DP = TP x CP x DP per pipeline stage)
    and its MoE README recommends expert TP 1 for fine-grained MoE ("Use ETP=1 for MoE (better GEMM
    efficiency, less communication)": NVIDIA/Megatron-LM@d98e8a64ddf3:megatron/core/transformer/moe/
    README.md); Megatron-Bridge's MoE recipes all set it (expert_tensor_parallel_size=1 in the DeepSeek-V3
    and Qwen3 bases: NVIDIA-NeMo/Megatron-Bridge@042641823051:scripts/performance/configs/deepseek/
    deepseek_workload_base_configs.py, @01b2977e518f:scripts/performance/configs/qwen/
    qwen3_workload_base_configs.py); torchtitan's experts borrow the FSDP and TP ranks and are never
    tensor-parallel (efsdp = dp_shard x cp x tp / ep, pytorch/torchtitan@b5bcd76c66d0:torchtitan/config/
    configs.py); DeepSpeed-MoE's enable_expert_tensor_parallelism defaults to False. Megatron-LM's own flag
    defaults to TP (megatron/training/arguments.py), so the launch command states it. tp where no expert
    parallelism runs (or ep does not divide the ranks: a layout config_check refuses)."""
    if ep <= 1 or (tp * ranks) % ep:
        return tp
    return 1
