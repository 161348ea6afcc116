"""Provides the GPU catalogue schema: memory, bandwidth, dense peaks per dtype, links, features, price."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Annotated, Literal

from advisor.catalog.common import CatalogueId, Check, PosFloat, PosInt
from advisor.catalog.dates import age_months

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


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Interconnect:
    """The GPU-to-GPU link inside one server."""

    kind: Literal["nvswitch", "nvlink-mesh", "nvlink-bridge", "pcie", "infinity-fabric"]
    """nvlink-mesh: direct NVLink between some pairs only (V100 SXM2's hybrid cube-mesh), no switch."""
    gbs: PosFloat | None = None
    """Per GPU, both directions added, GB/s."""
    domain: PosInt = 1
    """How many GPUs share that link (the NVLink domain)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Tflops:
    """Dense peak throughput per dtype in TFLOPS (int8 in TOPS); absent = unsupported or unsourced."""

    fp32: PosFloat | None = None
    tf32: PosFloat | None = None
    fp16: PosFloat | None = None
    bf16: PosFloat | None = None
    fp8: PosFloat | None = None
    int8: PosFloat | None = None


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Features:
    """Hardware feature flags that gate precisions and kernels."""

    bf16: bool
    fp8: bool
    flash_attention: bool


# A purchase price older than this is marked old (as a cloud offer older than 12 months is marked stale):
# GPU prices move a lot in two years (Lambda's H100 SXM estimate of 2023 is a third above 2026 street prices).
PRICE_OLD_MONTHS = 24.0


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Price:
    """Purchase price of one GPU, with the date it was written and its source."""

    usd: PosFloat
    date: dt.date
    """When the figure was written (the source's commit or publication), not when it was read."""
    source: str
    kind: Literal["list", "street", "estimate"]

    def age_months(self, now: dt.date | None = None) -> float:
        """Months since the price was written ($GPU_ADVISOR_TODAY pins today)."""
        return age_months(self.date, now)

    def is_old(self, now: dt.date | None = None) -> bool:
        """Whether the price is older than PRICE_OLD_MONTHS."""
        return self.age_months(now) > PRICE_OLD_MONTHS

    def label(self, now: dt.date | None = None) -> str:
        """'estimate of 2023-01-12, old: 47 months' or 'street price of 2026-05-25'."""
        kind = "estimate" if self.kind == "estimate" else f"{self.kind} price"
        text = f"{kind} of {self.date.isoformat()}"
        return f"{text}, old: {self.age_months(now):.0f} months" if self.is_old(now) else text


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Gpu:
    """One accelerator of the catalogue."""

    id: CatalogueId
    name: str
    vendor: Literal["nvidia", "amd", "intel", "google"]
    aliases: tuple[str, ...] = ()
    architecture: str
    compute_capability: Annotated[str, Check(pattern=r"^\d+\.\d+$")] | None = None
    form_factor: Literal["pcie", "sxm2", "sxm4", "sxm5", "sxm6", "oam", "superchip", "nvl"]
    release_date: dt.date | None = None
    memory_gb: PosFloat
    memory_unit: Literal["GiB", "GB"] = "GiB"
    """The unit of memory_gb: NVIDIA's and AMD's 'GB' of device memory is binary (80 GB = 80 GiB)."""
    memory_ecc: bool = False
    """GDDR memory whose ECC bits take 1/16 of it, on by default on NVIDIA's data-centre GDDR parts."""
    memory_bw_gbs: PosFloat
    tdp_w: PosInt | None = None
    pcie_gen: PosInt | None = None
    gpus_per_node: PosInt
    fabric: str
    features: Features
    interconnect: Interconnect
    tflops: Tflops
    price: Price | None = None
    field_sources: dict[str, str]
    missing: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for flag in ("bf16", "fp8"):
            if (
                getattr(self.features, flag)
                and getattr(self.tflops, flag) is None
                and f"tflops.{flag}" not in self.missing
            ):
                raise ValueError(f"features.{flag} is true but tflops.{flag} is absent and not in 'missing'")
        if self.tflops.fp16 is None and self.tflops.bf16 is None and "tflops.fp16" not in self.missing:
            raise ValueError("needs tflops.fp16 or tflops.bf16 (or a 'missing' note)")

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
