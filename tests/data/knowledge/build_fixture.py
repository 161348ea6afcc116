"""Provides the script that trims the shipped knowledge into this small, deterministic test fixture."""

# Run from the repository root: `.venv/bin/python tests/data/knowledge/build_fixture.py`, again whenever
# the knowledge schema changes. Entries are copied unchanged with the sources they cite, so the fixture
# stays as valid as knowledge/; assumptions, rules, checklist and TCO files are copied whole.

from __future__ import annotations

import csv
import io
import shutil
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

SRC = Path("knowledge")
DST = Path(__file__).resolve().parent
GPUS = ("h100-sxm", "a100-80gb-sxm", "l40s", "l4")
MODELS = ("llama-3.1-8b", "llama-2-70b", "resnet50", "mpt-7b", "gpt3-175b")
# A few offers per GPU: AWS us-east-1 (on-demand and spot), GCP us-central1 and Lambda on-demand.
OFFER_KEEP = {("aws", "us-east-1"), ("gcp", "us-central1"), ("lambda", "us-east-1")}
UNCHANGED = ("assumptions.toml", "rules.toml", "checklist.toml", "tco.toml", "storage.toml", "guide.toml")
HEADER = "# Test fixture trimmed from knowledge/{name} by build_fixture.py; do not edit by hand.\n"


def _load(name: str) -> dict[str, Any]:
    return tomllib.loads((SRC / name).read_text(encoding="utf-8"))


def _cited(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> set[str]:
    """Every source key the kept rows cite (row source, field sources, price source)."""
    used: set[str] = set()
    for row in rows:
        for key in keys:
            value = row.get(key)
            if isinstance(value, str):
                used.add(value)
            elif isinstance(value, dict):
                used |= {v for v in value.values() if isinstance(v, str)}
        if isinstance(row.get("price"), dict):
            used.add(row["price"]["source"])
    return used


def _write(name: str, data: dict[str, Any]) -> None:
    (DST / name).write_text(HEADER.format(name=name) + tomli_w.dumps(data), encoding="utf-8")


def _trim(name: str, table: str, keep: Any, cite_keys: tuple[str, ...]) -> None:
    data = _load(name)
    rows = [r for r in data[table] if keep(r)]
    used = _cited(rows, cite_keys)
    data["sources"] = {k: v for k, v in data.get("sources", {}).items() if k in used}
    data[table] = rows
    _write(name, data)


def main() -> None:
    """Write the trimmed catalogue files and copy the unchanged ones."""
    for name in UNCHANGED:
        shutil.copyfile(SRC / name, DST / name)
    _trim("gpus.toml", "gpu", lambda r: r["id"] in GPUS, ("field_sources",))
    _trim("models.toml", "model", lambda r: r["id"] in MODELS, ("source", "field_sources"))
    _trim(
        "prices.toml",
        "offer",
        lambda r: (
            r["gpu"] in GPUS
            and (r["provider"], r["region"]) in OFFER_KEEP
            and r["pricing"] in ("on-demand", "spot")
        ),
        ("source",),
    )
    with (SRC / "benchmarks.csv").open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [r for r in reader if r["workload"] == "resnet50" and r["gpu"] in GPUS]
        fields = reader.fieldnames or []
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (DST / "benchmarks.csv").write_text(out.getvalue(), encoding="utf-8")


if __name__ == "__main__":
    main()
