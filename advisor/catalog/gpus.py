"""Provides the GPU catalogue schema: memory, bandwidth, dense peaks per dtype, links, features, price."""

from __future__ import annotations

import datetime as dt
from dataclasses import field
from typing import Literal

from advisor.catalog.common import Record, record

Dtype = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
DTYPES: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
# The dtypes each NVIDIA architecture's tensor cores execute (NVIDIA architecture whitepapers: Volta FP16;
# Turing adds INT8; Ampere adds TF32 and BF16; Ada and Hopper add FP8). Every GPU needs a peak for each, or a
# 'missing' note saying why none is sourced.
TENSOR_DTYPES: dict[str, tuple[str, ...]] = {
    "volta": ("fp16",),
    "turing": ("fp16", "int8"),
    "ampere": ("tf32", "fp16", "bf16", "int8"),
    "ada": ("tf32", "fp16", "bf16", "fp8", "int8"),
    "hopper": ("tf32", "fp16", "bf16", "fp8", "int8"),
    "blackwell": ("tf32", "fp16", "bf16", "fp8", "int8"),
}


@record
class Interconnect(Record):
    """The GPU-to-GPU link inside one server."""

    kind: Literal["nvswitch", "nvlink-mesh", "nvlink-bridge", "pcie", "infinity-fabric"]
    """nvlink-mesh: direct NVLink between some pairs only (V100 SXM2's hybrid cube-mesh), no switch."""
    gbs: float | None = None
    """Per GPU, both directions added, GB/s."""
    domain: int = 1
    """How many GPUs share that link (the NVLink domain)."""


@record
class Tflops(Record):
    """Dense peak throughput per dtype in TFLOPS (int8 in TOPS); absent = unsupported or unsourced."""

    fp32: float | None = None
    tf32: float | None = None
    fp16: float | None = None
    bf16: float | None = None
    fp8: float | None = None
    int8: float | None = None


@record
class Features(Record):
    """Hardware feature flags that gate precisions and kernels."""

    bf16: bool
    fp8: bool
    flash_attention: bool


@record
class Price(Record):
    """Purchase price of one GPU, with its date and source."""

    usd: float
    date: dt.date
    source: str
    kind: Literal["list", "street", "estimate"]


@record
class Gpu(Record):
    """One accelerator of the catalogue."""

    id: str
    name: str
    vendor: Literal["nvidia", "amd", "intel", "google"]
    aliases: tuple[str, ...] = ()
    architecture: str
    compute_capability: str | None = None
    form_factor: Literal["pcie", "sxm2", "sxm4", "sxm5", "sxm6", "oam", "superchip", "nvl"]
    release_date: dt.date | None = None
    memory_gb: float
    memory_unit: Literal["GiB", "GB"] = "GiB"
    """The unit of memory_gb: NVIDIA's and AMD's 'GB' of device memory is binary (80 GB = 80 GiB)."""
    memory_ecc: bool = False
    """GDDR memory whose ECC bits take 1/16 of it, on by default on NVIDIA's data-centre GDDR parts."""
    memory_bw_gbs: float
    tdp_w: int | None = None
    pcie_gen: int | None = None
    gpus_per_node: int
    fabric: str
    features: Features
    interconnect: Interconnect
    tflops: Tflops
    price: Price | None = None
    field_sources: dict[str, str]
    missing: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for a dtype, or None when the GPU lacks it or no source gives it."""
        return getattr(self.tflops, dtype)

    @property
    def nvlink_domain(self) -> int:
        """GPUs reachable over NVLink/Infinity Fabric (1 when only PCIe)."""
        return 1 if self.interconnect.kind == "pcie" else self.interconnect.domain

    @property
    def compute_capability_value(self) -> float:
        """Compute capability as a number (0.0 for non-NVIDIA parts)."""
        return float(self.compute_capability) if self.compute_capability else 0.0
