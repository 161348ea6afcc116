"""Provides probe(): one probe of this node, from the device's name to the payload of its node profile
(the catalogue id of its GPU, the link key of its collectives, the measured rows and what was left out)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from advisor.catalog.device_names import catalogue_gpu
from advisor.probe.measure import Backend, DeviceInfo, Run, measure
from advisor.probe.plan import build_plan
from advisor.question.errors import InputError

if TYPE_CHECKING:
    from advisor.catalog.gpus import Gpu
    from advisor.catalog.loader import Knowledge

# The whole probe stays under two minutes on a node that answers; quick is for a first look.
BUDGET_S = 100.0
QUICK_BUDGET_S = 40.0
# NVLink generation by architecture (NVIDIA's NVLink pages: V100 NVLink 2, A100 3, H100/H200 4, B200 5).
NVLINK = {"volta": "nvlink2", "ampere": "nvlink3", "hopper": "nvlink4", "blackwell": "nvlink5"}
_INTERCONNECT = {"nvswitch": "nvlink", "nvlink-mesh": "nvlink", "nvlink-bridge": "nvlink", "pcie": "pcie"}


def slug(text: str) -> str:
    """text as a profile-name part: lower case, runs of other characters as one '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def default_name(gpu: str, host: str) -> str:
    """`<gpu>-<host>` (the catalogue id, or the device name made a slug), at most 80 characters."""
    name = "-".join(p for p in (slug(gpu), slug(host)) if p)[:80].strip("-.")
    return name or "node"


def link_key(gpu: Gpu | None, topology: str) -> tuple[str, str]:
    """The collectives' link key (knowledge/operations/README.md) and where it came from: the topology the
    backend saw where it saw one, else the catalogue's in-server interconnect of the GPU."""
    kind, said = topology, "nvidia-smi topo -m" if topology in ("nvlink", "pcie") else "ROCm device"
    if not kind and gpu is not None:
        kind, said = _INTERCONNECT.get(gpu.interconnect.kind, "xgmi"), "the catalogue's interconnect"
    if kind == "nvlink" and gpu is not None and gpu.architecture in NVLINK:
        return NVLINK[gpu.architecture], f"link from {said} and the architecture ({gpu.architecture})"
    if kind == "pcie" and gpu is not None and gpu.pcie_gen:
        return f"pcie{gpu.pcie_gen}", f"link from {said} and the catalogue's PCIe generation"
    if kind:
        return kind, f"link from {said}; its generation is not known"
    return "unknown", "link not known: no topology answer and no catalogue GPU"


def identify(info: DeviceInfo, knowledge: Knowledge) -> tuple[str, Gpu | None, list[str]]:
    """The id the rows carry (catalogue id, else the device name as torch gives it), the catalogue GPU, and
    notes on the mapping."""
    match = catalogue_gpu(info.name, knowledge, info.memory_bytes, info.arch)
    notes = [f"device {info.name!r} is catalogue GPU {match.gpu}" if match.gpu else match.note]
    if match.gpu and match.note:
        notes.append(match.note)
    if match.gpu is None:
        notes.append("stored under the name torch reports; no catalogue GPU's answers use it")
        return info.name, None, notes
    return match.gpu, knowledge.gpu(match.gpu), notes


def nccl_settings() -> str:
    """The NCCL/RCCL settings in the environment (they change what collectives measure), for the notes."""
    keys = sorted(k for k in os.environ if k.startswith(("NCCL_", "RCCL_")))
    return ", ".join(f"{k}={os.environ[k]}" for k in keys)


def ranks_for(info: DeviceInfo, gpus: int | None) -> int:
    """The GPUs the collectives span: all visible, or the number asked for (InputError beyond those)."""
    if gpus is None:
        return info.count
    if not 1 <= gpus <= info.count:
        raise InputError(
            f"collectives across {gpus} GPUs: PyTorch sees {info.count} (1 to {info.count} accepted)"
        )
    return gpus


def probe(
    backend: Backend,
    info: DeviceInfo,
    knowledge: Knowledge,
    *,
    name: str,
    host: str,
    today: str,
    quick: bool = False,
    gpus: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Measure the node and return its profile payload (rows with source `probe:<name>`, dated today)."""
    gpu_id, gpu, notes = identify(info, knowledge)
    ranks = ranks_for(info, gpus)
    link, link_note = link_key(gpu, info.topology)
    fp8 = backend.supports_fp8()
    plan = build_plan(quick=quick, fp8=fp8, memory_bytes=info.memory_bytes)
    if ranks > 1 and nccl_settings():
        notes.append(f"collectives ran with {nccl_settings()}")
    if not fp8:
        notes.append("fp8: not measured (torch._scaled_mm does not run on this GPU or torch build)")
    started = clock()
    run = Run(
        plan=plan,
        gpu=gpu_id,
        link=link,
        ranks=ranks,
        source=f"probe:{name}",
        measured_on=today,
        clock=clock,
        deadline=started + (QUICK_BUDGET_S if quick else BUDGET_S),
        say=say,
        notes=[*notes, link_note],
    )
    measure(backend, run)
    return {
        "name": name,
        "gpu": gpu_id,
        "gpus": ranks,
        "host": host,
        "measured_on": today,
        "torch": info.torch,
        "cuda": info.cuda,
        "device_name": info.name,
        "quick": quick,
        "duration_s": round(clock() - started, 1),
        "notes": run.notes,
        **run.rows,
    }
