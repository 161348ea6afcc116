"""The GH200's two memory variants (gh200-datasheet: 96GB HBM3 up to 4 TB/s, 144GB HBM3e up to 4.9 TB/s) are
two cards: a run on the 144 GB part is not judged against the 96 GB part's memory."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from advisor.catalog.device_names import catalogue_gpu

ROOT = Path(__file__).resolve().parents[2]
GIB = 1024**3


def test_the_variants_differ_in_memory_and_bandwidth_only(knowledge) -> None:
    small, large = knowledge.gpu("gh200"), knowledge.gpu("GH200 144GB")
    assert large.id == "gh200-144gb"
    assert (small.memory_gb, large.memory_gb) == (96.0, 144.0)
    assert large.memory_bw_gbs > small.memory_bw_gbs
    assert large.tflops == small.tflops and large.architecture == small.architecture


def test_a_device_name_or_its_memory_says_which_variant(knowledge) -> None:
    assert catalogue_gpu("NVIDIA GH200 480GB", knowledge, int(95 * GIB)).gpu == "gh200"
    assert catalogue_gpu("GH200 Superchip", knowledge, int(139 * GIB)).gpu == "gh200-144gb"
    assert catalogue_gpu("GH200 Superchip", knowledge, int(95 * GIB)).gpu == "gh200"
    assert catalogue_gpu("NVIDIA GH200 144G HBM3e", knowledge).gpu == "gh200-144gb"


def test_hpe_8b_on_one_gh200_fits_the_144gb_part_it_ran_on() -> None:
    """heldout9's HPE 8B on one GH200 (its source_gpu: 144G HBM3e), mapped to the 144 GB card it ran on:
    answered there, refused on the 96 GB card (read from the CSV, the row's own configuration)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_heldout

    with (ROOT / "benchmarks" / "heldout9_training_runs.csv").open(newline="", encoding="utf-8") as f:
        rows = [{k: v or "" for k, v in r.items()} for r in csv.DictReader(f)]
    row = next(r for r in rows if r["id"] == "hpe-8b-1xgh200")
    assert "144G" in row["source_gpu"] and row["gpu"] == "gh200-144gb"
    args = bench_heldout.training_args(row, "stated")
    answered = bench_heldout.cli.predict(args)
    assert answered.data is not None, answered.refusal
    i = args.index("--gpu")
    assert bench_heldout.cli.predict([*args[:i], "--gpu", "gh200", *args[i + 2 :]]).data is None
