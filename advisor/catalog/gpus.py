"""Provides the GPU catalogue schema: memory, bandwidth, dense peaks per dtype, links, features, price."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from advisor.catalog.common import Strict

Dtype = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
DTYPES: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
# The dtypes each NVIDIA architecture's tensor cores execute (NVIDIA architecture whitepapers: Volta FP16;
# Turing adds INT8; Ampere adds TF32 and BF16; Ada and Hopper add FP8). Every GPU needs a peak for each, or a
# 'missing' note saying why none is sourced.
TENSOR_DTYPES: dict[str, tuple[str, ...]] = {
    "volta": ("fp16",), "turing": ("fp16", "int8"), "ampere": ("tf32", "fp16", "bf16", "int8"),
    "ada": ("tf32", "fp16", "bf16", "fp8", "int8"), "hopper": ("tf32", "fp16", "bf16", "fp8", "int8"),
    "blackwell": ("tf32", "fp16", "bf16", "fp8", "int8"),
}


class Interconnect(Strict):
    """The GPU-to-GPU link inside one server."""

    kind: Literal["nvswitch", "nvlink-mesh", "nvlink-bridge", "pcie", "infinity-fabric"]
    """nvlink-mesh: direct NVLink between some pairs only (V100 SXM2's hybrid cube-mesh), no switch."""
    gbs: PositiveFloat | None = None
    """Per GPU, both directions added, GB/s."""
    domain: PositiveInt = 1
    """How many GPUs share that link (the NVLink domain)."""


class Tflops(Strict):
    """Dense peak throughput per dtype in TFLOPS (int8 in TOPS); absent = unsupported or unsourced."""

    fp32: PositiveFloat | None = None
    tf32: PositiveFloat | None = None
    fp16: PositiveFloat | None = None
    bf16: PositiveFloat | None = None
    fp8: PositiveFloat | None = None
    int8: PositiveFloat | None = None


class Features(Strict):
    """Hardware feature flags that gate precisions and kernels."""

    bf16: bool
    fp8: bool
    flash_attention: bool


class Price(Strict):
    """Purchase price of one GPU, with its date and source."""

    usd: PositiveFloat
    date: dt.date
    source: str
    kind: Literal["list", "street", "estimate"]


class Gpu(Strict):
    """One accelerator of the catalogue."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    name: str
    vendor: Literal["nvidia", "amd", "intel", "google"]
    aliases: tuple[str, ...] = ()
    architecture: str
    compute_capability: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    form_factor: Literal["pcie", "sxm2", "sxm4", "sxm5", "sxm6", "oam", "superchip", "nvl"]
    release_date: dt.date | None = None
    memory_gb: PositiveFloat
    memory_bw_gbs: PositiveFloat
    tdp_w: PositiveInt | None = None
    pcie_gen: PositiveInt | None = None
    gpus_per_node: PositiveInt
    fabric: str
    features: Features
    interconnect: Interconnect
    tflops: Tflops
    price: Price | None = None
    field_sources: dict[str, str]
    missing: dict[str, str] = {}
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _supported_dtypes_have_figures(self) -> Gpu:
        for flag in ("bf16", "fp8"):
            if getattr(self.features, flag) and getattr(self.tflops, flag) is None:
                if f"tflops.{flag}" not in self.missing:
                    raise ValueError(f"features.{flag} is true but tflops.{flag} is absent and not in 'missing'")
        if self.tflops.fp16 is None and self.tflops.bf16 is None and "tflops.fp16" not in self.missing:
            raise ValueError("needs tflops.fp16 or tflops.bf16 (or a 'missing' note)")
        return self

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
