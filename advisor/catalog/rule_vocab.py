"""Provides the closed vocabulary of rules.toml: the facts a rule may test with the type each holds, and the
operators (read by the rules engine and by the records its condition trees are validated as)."""

from __future__ import annotations

from typing import Literal

# The closed vocabulary of facts a rule may test, with the type each holds. Scope is the prefix:
# job facts are fixed for a run, gpu facts per GPU type, plan facts per candidate plan.
FIELDS: dict[str, type] = {
    "workload.kind": str,  # pretrain | finetune | lora | qlora | inference
    "workload.training": bool,
    "workload.params_b": float,  # total parameters, billions
    "workload.model_kind": str,  # llm | encoder | vit | cnn | rnn | speech | recsys
    "workload.image_model": bool,  # cnn or vit
    "workload.sequence_model": bool,  # llm, encoder, rnn, speech
    "workload.seq_len": int,
    "workload.optimizer": str,
    "workload.recompute_given": bool,  # the user stated the recomputation policy
    "workload.tp_given": bool,  # the user stated the tensor-parallel size
    "constraints.deployment": str,  # cloud | on-prem
    "constraints.pricing": str,  # on-demand | spot | reserved
    "constraints.objective": str,
    "constraints.has_deadline": bool,
    "constraints.has_budget": bool,
    "gpu.id": str,
    "gpu.vendor": str,
    "gpu.architecture": str,
    "gpu.memory_gb": float,
    "gpu.bf16": bool,
    "gpu.fp8": bool,
    "gpu.flash_attention": bool,
    "gpu.compute_capability": float,
    "gpu.interconnect": str,  # nvswitch | nvlink-bridge | pcie | infinity-fabric
    "gpu.nvlink_domain": int,
    "gpu.gpus_per_node": int,
    "gpu.fabric": str,
    "gpu.fabric_gbps_per_gpu": float,
    "gpu.rdma_between_instances": bool,  # separate instances share an RDMA fabric (knowledge/capacity.toml)
    "gpu.consumer": bool,  # GeForce parts
    "plan.precision": str,
    "plan.count": int,
    "plan.nodes": int,
    "plan.tp": int,
    "plan.tp_outside_nvlink": bool,  # tp larger than the GPU's NVLink domain
    "plan.tp_across_servers": bool,  # tp larger than the GPUs of one server
    "plan.pp": int,
    "plan.mp_across_nodes": bool,  # a tensor/pipeline/context/expert-parallel group spans instances
    "plan.dp": int,
    "plan.sharding": str,  # none | ddp | zero1 | zero2 | zero3
    "plan.recompute": str,  # none | selective | full
    "plan.micro_batch": int,
    "plan.grad_accum": int,  # micro-batches per optimizer step (per pipeline, with pipeline parallelism)
    "plan.bubble_pct": int,  # the pipeline bubble, % of the step: the step model's bubble time / step time
    "plan.recompute_needed": bool,  # the plan does not fit at its micro-batch without its recomputation
    "plan.memory_fraction": float,  # upper estimate / capacity
    "plan.dominant": str,  # the largest memory component
    "plan.comm_fraction": float,  # exposed communication / step time at speed of light
    "plan.hours": float,  # P50 hours of the job
}

Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in"]
ORDERED_OPS = {"lt", "le", "gt", "ge"}
