"""Provides Context: one run's knowledge, job, constraints, efficiency model, and the facts rules test."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.catalog.assumptions import Fabric
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.rules import Rule
from advisor.job.defaults import measured_batch
from advisor.job.inputs import Constraints
from advisor.job.resolve import Job
from advisor.learned.efficiency.base import EfficiencyModel
from advisor.question.errors import InputError

IMAGE_KINDS = ("cnn", "vit")
TCP_FABRIC = "eth-100"
"""The catalogue's ordinary (TCP) network: instances documented without RDMA and without a bandwidth."""
SEQUENCE_KINDS = ("llm", "encoder", "rnn", "speech")

if TYPE_CHECKING:  # a prediction on one GPU reads no capacity file
    from advisor.catalog.capacity import Link


@dataclass(slots=True, repr=False, eq=False)
class Context:
    """Everything one recommendation or prediction computes from."""

    knowledge: Knowledge
    job: Job
    constraints: Constraints
    efficiency: EfficiencyModel
    link: Link | None = None
    """The documented network between the instances the plans searched now are priced on (None: not known,
    the GPU's default fabric); set on a copy per group of offers (advisor/answer/recommend.py)."""
    rules_by_scope: dict[str, list[Rule]] = field(init=False)
    job_facts: dict[str, Any] = field(init=False)
    _batches: dict[tuple[str, str], int | None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        scopes: dict[str, list[Rule]] = {"job": [], "gpu": [], "plan": []}
        for rule in self.knowledge.rules.rule:
            scopes[rule.scope].append(rule)
        self.rules_by_scope = scopes
        job, c = self.job, self.constraints
        if c.fabric is not None and c.fabric not in self.knowledge.assumptions.fabric:
            raise InputError(
                field="fabric",
                value=c.fabric,
                problem="is not a known fabric",
                accepted=", ".join(self.knowledge.assumptions.fabric),
            )
        self.job_facts = {
            "workload.kind": job.kind,
            "workload.training": job.training,
            "workload.params_b": job.params_b,
            "workload.model_kind": job.model_kind,
            "workload.image_model": job.model_kind in IMAGE_KINDS,
            "workload.sequence_model": job.model_kind in SEQUENCE_KINDS,
            "workload.seq_len": job.seq_len,
            "workload.optimizer": job.optimizer,
            "workload.recompute_given": job.config.recompute is not None,
            "workload.tp_given": job.config.tp is not None,
            "constraints.deployment": c.deployment,
            "constraints.pricing": c.pricing,
            "constraints.objective": c.objective,
            "constraints.has_deadline": c.deadline_hours is not None,
            "constraints.has_budget": c.budget_usd is not None,
        }

    @property
    def headroom(self) -> float:
        """Fraction of GPU memory a plan must leave free."""
        h = self.constraints.headroom
        return self.knowledge.assumptions.memory["headroom"].value if h is None else h

    def fabric(self, gpu: Gpu, link: Link | str | None = "ctx") -> Fabric:
        """The inter-node fabric a plan is timed on: the user's --fabric; else the bandwidth the provider
        documents between its instances (knowledge/capacity.toml); Ethernet where it documents TCP without a
        figure, or documents nothing; the GPU's catalogue default where it documents an RDMA fabric without a
        figure, or with no link at all (on-prem: the user's own cluster). `link` defaults to this
        context's."""
        fabrics = self.knowledge.assumptions.fabric
        if self.constraints.fabric is not None:
            return fabrics[self.constraints.fabric]
        known = self.link if isinstance(link, str) else link
        if known is not None:
            documented = known.fabric()
            if documented is not None:
                return documented
            if not known.rdma:  # TCP as documented, or nothing documented: no RDMA fabric is assumed
                return fabrics[TCP_FABRIC]
        return fabrics[gpu.fabric]

    def rdma(self, link: Link | str | None = "ctx") -> bool:
        """Whether separate instances share an RDMA fabric: the user's --fabric says so unless it is
        Ethernet; else as documented (a cloud offer nothing describes: not known, so no); no link at all
        (on-prem, or one instance): the GPU's own cluster fabric."""
        if self.constraints.fabric is not None:
            return self.constraints.fabric != TCP_FABRIC
        known = self.link if isinstance(link, str) else link
        return known.rdma if known is not None else True

    def gpu_facts(self, gpu: Gpu, node_size: int, link: Link | str | None = "ctx") -> dict[str, Any]:
        """Job facts plus this GPU's (and the network between its instances)."""
        fabric = self.fabric(gpu, link)
        name = gpu.name.lower()
        return {
            **self.job_facts,
            "gpu.id": gpu.id,
            "gpu.vendor": gpu.vendor,
            "gpu.architecture": gpu.architecture,
            "gpu.memory_gb": gpu.memory_gb,
            "gpu.bf16": gpu.features.bf16,
            "gpu.fp8": gpu.features.fp8,
            "gpu.flash_attention": gpu.features.flash_attention,
            "gpu.compute_capability": gpu.compute_capability_value,
            "gpu.interconnect": gpu.interconnect.kind,
            "gpu.nvlink_domain": gpu.nvlink_domain,
            "gpu.gpus_per_node": gpu.gpus_per_node,
            # The catalogue fabric's id, or the documented link's name (its bandwidth follows).
            "gpu.fabric": next(
                (k for k, v in self.knowledge.assumptions.fabric.items() if v is fabric), fabric.name
            ),
            "gpu.fabric_gbps_per_gpu": fabric.gbs_per_gpu(node_size) * 8.0,
            "gpu.rdma_between_instances": self.rdma(link),
            "gpu.consumer": "geforce" in name or "titan" in name,
        }

    def default_batch(self, gpu: Gpu, precision: str) -> int | None:
        """The per-GPU batch the benchmarks used for this workload on this GPU (or the nearest in memory)."""
        key = (gpu.id, precision)
        if key not in self._batches:
            self._batches[key] = measured_batch(self.knowledge, self.job, gpu, precision)
        return self._batches[key]
