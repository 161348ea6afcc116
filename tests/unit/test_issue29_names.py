"""Issue 29: one GPU-name map for launch artefacts, read from the catalogue's aliases, naming every GPU by a
name SkyPilot's catalogue lists."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from advisor.catalog.skypilot import SHARED_NAME, gpu_of, skypilot_name, skypilot_names
from advisor.ops.launch import SKY_CLOUDS, sky_resources
from advisor.ops.plan_facts import PlanFacts

FIXTURE = Path(__file__).parents[1] / "data" / "skypilot-v8"


def test_every_catalogued_gpus_skypilot_name_is_one_skypilot_accepts(knowledge) -> None:
    names = skypilot_names(knowledge).clouds
    named = 0
    for gpu in knowledge.gpus:
        for cloud in (None, *SKY_CLOUDS):
            name = skypilot_name(knowledge, gpu.id, cloud)
            if name is None:
                continue
            named += 1
            assert name in names, (gpu.id, name)
            # The name is the GPU's own (or, for a PCIe card SkyPilot lists under the SXM name, the SXM's).
            assert gpu_of(knowledge, name) == SHARED_NAME.get(gpu.id, gpu.id), (gpu.id, name)
    assert named > 100


def test_every_offer_on_a_skypilot_cloud_is_named_as_that_cloud_lists_it(knowledge) -> None:
    names = skypilot_names(knowledge).clouds
    for offer in knowledge.offers:
        if offer.provider not in SKY_CLOUDS:
            continue
        name = skypilot_name(knowledge, offer.gpu, offer.provider)
        if name is not None and any(
            offer.provider in names[n] for n in names if gpu_of(knowledge, n) == offer.gpu
        ):
            assert offer.provider in names[name], (offer.gpu, offer.provider, name)


def test_fixture_catalogue_names_resolve(knowledge) -> None:
    """Every AcceleratorName of the shipped SkyPilot fixture that maps to a GPU maps back to a name listed."""
    for path in FIXTURE.glob("*/vms.csv"):
        with path.open() as f:
            for row in csv.DictReader(f):
                gid = gpu_of(knowledge, row["AcceleratorName"]) if row["AcceleratorName"] else None
                if gid is not None:
                    assert skypilot_name(knowledge, gid) in skypilot_names(knowledge).clouds


@pytest.mark.parametrize(
    "gpu, cloud, name",
    [
        ("rtx-a5000", "runpod", "RTXA5000"),  # the issue: written as RTX-A5000
        ("h100-nvl", "runpod", "H100-NVL"),  # the issue: written as H100, SkyPilot's SXM card
        ("h100-sxm", "runpod", "H100-SXM"),
        ("h100-sxm", "aws", "H100"),
        ("rtx-a6000", "lambda", "A6000"),  # Lambda's catalogue spells it A6000, RunPod's RTXA6000
        ("rtx-a6000", "runpod", "RTXA6000"),
        ("a100-80gb-pcie", "aws", "A100-80GB"),
        ("gb200", None, None),  # not in SkyPilot's catalogue
    ],
)
def test_names(knowledge, gpu: str, cloud: str | None, name: str | None) -> None:
    assert skypilot_name(knowledge, gpu, cloud) == name


def _facts(gpu: str, provider: str | None, instance: str | None) -> PlanFacts:
    return PlanFacts(
        gpu=gpu, count=4, nodes=1, precision="bf16", tp=1, pp=1, dp=4, sharding="none", recompute="none",
        micro_batch=1, grad_accum=1, hours_p50=1.0, provider=provider, instance=instance,
    )  # fmt: skip


def test_task_resources_use_the_map(knowledge) -> None:
    res = sky_resources(knowledge, _facts("rtx-a5000", "runpod", "1x_RTXA5000_SECURE"), 1, spot=False)
    assert res["accelerators"] == "RTXA5000:1" and res["cloud"] == "runpod"
    res = sky_resources(knowledge, _facts("gb200", "oci", "BM.GPU.GB200.4"), 4, spot=False)
    assert "accelerators" not in res and res["instance_type"] == "BM.GPU.GB200.4"
