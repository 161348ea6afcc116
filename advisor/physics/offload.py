"""Prices an optimizer offloaded to the host CPU: the Adam step in host memory, the parameters sent back."""

from __future__ import annotations

from advisor.catalog.assumptions import Assumptions, optimizer_bytes
from advisor.catalog.gpus import Gpu
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.physics.op_prices import Price

GBS = 1e9
FP32 = 4.0
ADAM = ("adamw", "paged-adamw")  # the fp32-state Adams DeepSpeed's CPU-Adam runs


def offloaded(job: Job) -> bool:
    """Whether the job's optimizer step runs on the host CPU (ZeRO-Offload, ZeRO-Infinity, FSDP offload)."""
    return job.training and job.offload in ("optimizer", "params")


def host_share(layout: Layout) -> int:
    """The GPUs of this step that share one host's memory bandwidth (each runs its own optimizer shard)."""
    return max(1, min(layout.count, layout.node_size))


def cpu_bytes_per_param(job: Job, a: Assumptions) -> float:
    """Host-memory bytes the offloaded step touches per local parameter: the fp32 master weights, the
    optimizer states and the fp32 gradients, each read and written once (ZeRO-Offload keeps all of them on
    the host, arXiv:2101.06840 sec. 4.1)."""
    return 2.0 * (a.optimizer["master_weights"].value + optimizer_bytes(a.optimizer, job.optimizer) + FP32)


def host_bandwidth(gpu: Gpu, a: Assumptions) -> tuple[float, str]:
    """The host's memory bandwidth (GB/s, whole 2-socket host) and where it is stated: DDR5 beside a PCIe
    gen-5 GPU, DDR4 otherwise."""
    c = a.comm
    if (gpu.pcie_gen or 4) >= 5:
        ddr5 = c["host_memory_ddr5_gbs"]
        return ddr5.value, f"comm.host_memory_ddr5_gbs [{ddr5.source}]"
    ddr4 = c["host_memory_ddr4_gbs"]
    return ddr4.value, f"comm.host_memory_ddr4_gbs [{ddr4.source}]"


def cpu_adam_params_per_s(gpu: Gpu, a: Assumptions) -> tuple[float, str]:
    """Parameters a second the whole host's CPU Adam updates, measured: DeepSpeed's CPU-Adam on a DGX-2 host
    (ZeRO-Offload Table 4), scaled by this host's memory peak over that host's (Adam streams its states)."""
    c = a.comm
    rate, measured_on = c["cpu_adam_params_per_s"], c["cpu_adam_host_gbs"]
    bw, _ = host_bandwidth(gpu, a)
    source = (
        f"comm.cpu_adam_params_per_s [{rate.source}] x host / comm.cpu_adam_host_gbs [{measured_on.source}]"
    )
    return rate.value * bw / measured_on.value, source


def pcie_gbs(gpu: Gpu, a: Assumptions) -> float:
    """The GPU's x16 host link, one direction (PCI-SIG's rate of its generation; gen 4 if not catalogued)."""
    c = a.comm
    return {3: c["pcie_gen3_gbs"], 4: c["pcie_gen4_gbs"]}.get(pcie_gen(gpu), c["pcie_gen5_gbs"]).value


def pcie_gen(gpu: Gpu) -> int:
    """The PCIe generation priced: the catalogue's, within the generations assumptions.toml states (3-5)."""
    return min(max(gpu.pcie_gen or 4, 3), 5)


def offload_price(job: Job, layout: Layout, gpu: Gpu, a: Assumptions, w: float) -> Price:
    """The exposed seconds of one offloaded optimizer step per GPU: the Adam step over the host's
    parameters at the slower of the host's memory peak (a floor) and, under DeepSpeed, its CPU-Adam's
    measured rate scaled to this host (other stacks' CPU Adam has no published rate: the floor), then
    the updated `w`-byte parameters sent up over PCIe, which the next forward waits for.
    The gradients sent down stream in buckets under the backward pass (ZeRO-Offload sec. 4.1) and are not
    counted; DeepSpeed's one-step delayed parameter update, which would hide the CPU step, is off by
    default and not assumed."""
    local = job.trainable_params / layout.model_parallel / (layout.shard_ranks if layout.zero >= 1 else 1)
    bw, bw_source = host_bandwidth(gpu, a)
    cpu_s = local * cpu_bytes_per_param(job, a) * host_share(layout) / (bw * GBS)
    sources = [bw_source]
    basis = "host memory peak + PCIe nominal"
    if job.optimizer in ADAM and job.stack == "deepspeed":  # the rate is DeepSpeed's CPU-Adam kernel's
        rate, rate_source = cpu_adam_params_per_s(gpu, a)
        measured_s = local * host_share(layout) / rate
        if measured_s > cpu_s:
            cpu_s, basis = measured_s, "measured CPU-Adam rate scaled to the host + PCIe nominal"
            sources.append(rate_source)
    up_s = local * w / (pcie_gbs(gpu, a) * GBS)
    sources.append(f"comm.pcie_gen{pcie_gen(gpu)}_gbs [pcie]")
    link_s = link_bytes(job, layout, w) / (pcie_gbs(gpu, a) * GBS)
    if link_s > 0.0:
        basis += " + ZeRO's per-micro-step host copies (DeepSpeed v0.14.2)"
    return Price(cpu_s + up_s + link_s, "assumptions.toml " + ", ".join(sources), basis)


def link_bytes(job: Job, layout: Layout, w: float) -> float:
    """Bytes one GPU moves over its host link per step besides the updated parameters, under DeepSpeed's
    ZeRO offload (microsoft/DeepSpeed@5f631abc2f93, v0.14.2): the gradients accumulate on the host THROUGH
    the GPU, each micro-step after the first copying the host's 16-bit sum up, adding on the GPU and copying
    it back (stage 1/2: `async_accumulate_grad_in_cpu_via_gpu` in runtime/zero/stage_1_and_2.py; stage 3:
    `partition_grads` in runtime/zero/stage3.py, which also copies its first micro-step's buffer back up),
    then the fp32 gradient sent down at the boundary; with the parameters offloaded (stage 3), each
    forward, recomputed forward and backward fetches this GPU's shard of the weights from the host. The
    copies are counted exposed: DeepSpeed's default `pin_memory = false` makes them pageable, so the host
    thread waits on each; at the link's nominal rate this is a floor."""
    if job.stack != "deepspeed" or layout.zero < 1:
        return 0.0
    m = max(1, layout.grad_accum)
    local = job.trainable_params / layout.model_parallel / layout.shard_ranks
    copies = 2 * m if layout.zero == 3 else 2 * (m - 1)
    grads = local * (copies * w + FP32)
    if job.offload != "params" or layout.zero != 3:
        return grads
    passes = 3 if layout.recompute != "none" else 2
    return grads + passes * m * job.params / layout.model_parallel / layout.shard_ranks * w
