"""Provides the drift warning: the stack or engine version the user names is newer than every measured run
behind the figure (the published runs of that stack or engine, and the user's calibration runs)."""

from __future__ import annotations

import csv
import functools
import re

from advisor.catalog.loader import Knowledge
from advisor.catalog.run_store import default_profile, load_runs
from advisor.job.resolve import Job

# The name a stack's own version follows in the published runs' software column (knowledge/
# llm_benchmarks.csv): "transformers 5.17.0", "DeepSpeed 0.19.2", "nanotron v0.5", "Megatron-Core 0.12".
_STACK_WORD = {
    "hf": "transformers",
    "trl": "trl",
    "deepspeed": "deepspeed",
    "nanotron": "nanotron",
    "torchtitan": "torchtitan",
    "megatron": "megatron-core|megatron-lm|mcore",
    "fsdp": "torch",
    "pytorch": "torch",
    "unsloth": "unsloth",
    "axolotl": "axolotl",
    "torchtune": "torchtune",
}
_VERSION = re.compile(r"\d+(?:\.\d+)*")


def version_of(text: str) -> tuple[int, ...] | None:
    """The leading dotted number of a version string ('0.8.5rc1' -> (0, 8, 5)), None without one."""
    m = _VERSION.search(text or "")
    return tuple(int(p) for p in m.group(0).split(".")) if m else None


@functools.lru_cache(maxsize=8)
def _public(root: str, kind: str, key: str) -> tuple[tuple[int, ...], ...]:
    """The versions of the published runs of a stack (training) or engine (serving)."""
    from pathlib import Path

    if kind == "serving":
        rows = csv.DictReader((Path(root) / "serving_benchmarks.csv").open(encoding="utf-8"))
        found = [version_of(r["engine_version"]) for r in rows if r["engine"] == key]
    else:
        word = _STACK_WORD.get(key, re.escape(key))
        pattern = re.compile(rf"(?:{word})\s+v?(\d+(?:\.\d+)*)", re.IGNORECASE)
        rows = csv.DictReader((Path(root) / "llm_benchmarks.csv").open(encoding="utf-8"))
        found = [
            version_of(m.group(1)) for r in rows if r["stack"] == key and (m := pattern.search(r["software"]))
        ]
    return tuple(v for v in found if v is not None)


def drift_notes(knowledge: Knowledge, job: Job, gpu: str, key: str) -> tuple[str, ...]:
    """One warning when job.stack_version is newer than every measured run behind the figure, or when no run
    behind it names a version; none when the version is not given or a run as new stands behind it."""
    given = job.stack_version
    mine = version_of(given or "")
    if not given or mine is None:
        return ()
    kind = "training" if job.training else "serving"
    profile = job.profile or default_profile(gpu, key)
    own = [version_of(r.version or "") for r in load_runs(profile) if r.gpu == gpu and r.key == key]
    behind = [v for v in (*_public(str(knowledge.root), kind, key), *own) if v is not None]
    if not behind:
        return (
            f"{key} {given}: no measured run behind this figure names its {key} version; calibrate on a run "
            "of yours with it (gpu-advisor calibrate) to pin the figure to your version",
        )
    newest = max(behind)
    if mine <= newest:
        return ()
    shown = ".".join(map(str, newest))
    return (
        f"{key} {given} is newer than every measured run behind this figure (newest {shown}); its speed may "
        "have changed: calibrate on a run of yours with it (gpu-advisor calibrate)",
    )
