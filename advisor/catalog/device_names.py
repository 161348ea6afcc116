"""Provides catalogue_gpu(): the catalogue id (knowledge/gpus.toml) of a device name as PyTorch reports it
(torch.cuda.get_device_name, the same string nvidia-smi and rocm-smi print), or None with a note."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.question.errors import InputError

if TYPE_CHECKING:
    from advisor.catalog.loader import Knowledge

GIB = 1 << 30


@dataclass(frozen=True, slots=True, repr=False)
class DeviceMatch:
    """The catalogue id a device name maps to (None: not catalogued) and what the mapping assumed."""

    gpu: str | None
    note: str = ""


# Names the catalogue's aliases do not spell, as drivers report them. Sources: nvidia-smi/deviceQuery output
# ("NVIDIA H100 80GB HBM3": thamada/nvidia-smi nvsim/H100SXMx8_deviceQuery.py; "NVIDIA GH200 480GB":
# mredenti/PowerCapping configuration/OpenCL_benchmark.md; "NVIDIA H100 NVL", "NVIDIA B300 SXM6 AC",
# "AMD Instinct MI250X/MI250", "AMD Instinct MI300X (gfx942...)": nvidia-smi -L, runpodctl gpu list and
# torch collect_env reports in public repositories); the rule "H100 + HBM3 = SXM, H100 + PCIe/HBM2e = PCIe" is
# Lightning-AI/pytorch-lightning@0810121f:src/lightning/fabric/utilities/throughput.py (get_available_flops).
# Each rule: (pattern on the lower-cased name, id, smallest and largest memory in GiB torch may report, note).
_RULES: tuple[tuple[str, str | None, float, float, str], ...] = (
    (r"\bh200\b.*\bnvl\b", None, 0, 1e9, "H200 NVL is not in the catalogue (nearest: h200, the SXM part)"),
    (r"\bh100\b.*\bnvl\b", "h100-nvl", 0, 1e9, ""),
    (
        r"\bh100\b.*\b96\s*gb",
        "h100-sxm-96gb-500w",
        90,
        100,
        "the 96 GB H100 (HBM2e) is Meta's Grand Teton part",
    ),
    (r"\bh100\b.*(pcie|hbm2e)", "h100-pcie", 0, 90, ""),
    (r"\bh100\b.*hbm3\b", "h100-sxm", 0, 90, ""),
    (r"\bh100\b.*sxm", "h100-sxm", 0, 90, ""),
    (r"\bh200\b", "h200", 0, 1e9, ""),
    (r"\bgh200\b.*\b144\s*g", "gh200-144gb", 0, 1e9, ""),
    (r"\bgh200\b", "gh200", 0, 100, "the catalogue's GH200 is the 96 GB HBM3 part"),
    (r"\bgh200\b", "gh200-144gb", 100, 1e9, "the 144 GB HBM3e GH200"),
    (r"\bgb300\b", "gb300", 0, 1e9, ""),
    (r"\bgb200\b", "gb200", 0, 1e9, ""),
    (r"\bb300\b", "b300", 0, 1e9, ""),
    (r"\bb200\b", "b200", 0, 1e9, ""),
    (r"\ba100\b.*pcie", "a100-80gb-pcie", 60, 1e9, ""),
    (r"\ba100\b.*pcie", "a100-40gb-pcie", 0, 60, ""),
    (r"\ba100\b", "a100-80gb-sxm", 60, 1e9, ""),
    (r"\ba100\b", "a100-40gb-sxm", 0, 60, ""),
    (r"\bv100s\b", None, 0, 1e9, "V100S is not in the catalogue (nearest: v100-32gb)"),
    (r"\bv100\b", "v100-32gb", 24, 1e9, ""),
    (r"\bv100\b", "v100-16gb", 0, 24, ""),
    (r"\bmi325x\b", "mi325x", 0, 1e9, ""),
    (r"\bmi300x\b", "mi300x", 0, 1e9, ""),
    (
        r"\bmi250x?\b",
        "mi250x",
        0,
        1e9,
        "PyTorch sees each of an MI250X's two dies as one device (64 GB); the catalogue's mi250x is the "
        "whole package, so per-device figures are about half of it (the name also covers the MI250)",
    ),
)
# A ROCm device with no marketing name: its gfx target and memory say which part it is.
_GFX: tuple[tuple[str, str, float, float], ...] = (
    ("gfx942", "mi325x", 200, 1e9),
    ("gfx942", "mi300x", 150, 200),
)


def _catalogued(knowledge: Knowledge, name: str) -> str | None:
    try:
        return knowledge.gpu(name).id
    except InputError:
        return None


def catalogue_gpu(
    device_name: str, knowledge: Knowledge, memory_bytes: int | None = None, arch: str = ""
) -> DeviceMatch:
    """The catalogue GPU for a device name: its id or an alias first (with and without the vendor prefix),
    then the rules above (memory in bytes, where known, tells 40 GB from 80 GB parts); arch is the ROCm gfx
    target (gcnArchName) for a device without a marketing name. Unknown: DeviceMatch(None, note)."""
    raw = " ".join(device_name.split())
    base = re.sub(r"^(nvidia|amd|tesla)\s+", "", raw, flags=re.IGNORECASE)
    base = re.sub(r"\s*\(.*\)\s*$", "", base)  # "AMD Instinct MI300X (gfx942:sramecc+:xnack-)"
    sized = re.sub(r"\s+\d+\s*GB$", "", base, flags=re.IGNORECASE)  # "RTX A6000 48GB" -> "RTX A6000"
    candidates = (raw, base, sized, re.sub(r"^tesla\s+", "", base, flags=re.IGNORECASE))
    for candidate in dict.fromkeys(candidates):
        found = _catalogued(knowledge, candidate) if candidate else None
        if found is not None:
            return DeviceMatch(found)
    gib = memory_bytes / GIB if memory_bytes else None
    lowered = raw.lower()
    for pattern, gpu, low, high, note in _RULES:
        if re.search(pattern, lowered) and (gib is None or low <= gib < high):
            return DeviceMatch(gpu, note if gpu else f"{raw}: {note}")
    target = arch.split(":")[0].lower()
    for gfx, gpu, low, high in _GFX:
        if target == gfx and gib is not None and low <= gib < high:
            return DeviceMatch(gpu, f"named by its gfx target {gfx} and {gib:.0f} GiB of memory")
    return DeviceMatch(None, f"{raw or 'an unnamed device'} is not in the GPU catalogue")
