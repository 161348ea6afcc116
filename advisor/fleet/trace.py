"""Provides the replay of Alibaba's cluster-trace-gpu-v2023 (or a file in its format) through the simulator,
and the comparison of queueing delay and GPU allocation with what the trace recorded.

The trace is not shipped (its folder carries no licence of its own; the repository allows research and study
use): `load_trace(DIR)` reads `openb_node_list_gpu_node.csv` and `openb_pod_list_default.csv` from DIR."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from advisor.fleet.cluster import Pool
from advisor.fleet.power import NightCap
from advisor.fleet.sim import JobSpec, Simulation
from advisor.fleet.stats import quantile
from advisor.question.errors import InputError

NODES = "openb_node_list_gpu_node.csv"
PODS = "openb_pod_list_default.csv"
MILLI = 1000
METHOD = (
    "every GPU pod that the trace scheduled arrives at its creation time on the trace's own GPU nodes and "
    "holds num_gpu x gpu_milli thousandths of GPUs on one node for (deletion - scheduled) seconds; first "
    "come first served with skipping, best fit by node; CPU, memory, GPU-type constraints and per-GPU "
    "packing of shared pods are not modelled"
)


@dataclass(frozen=True, slots=True)
class Pod:
    """One GPU task of the trace, in seconds."""

    created: float
    scheduled: float | None
    deleted: float
    milli_gpus: int
    """GPUs requested x share of each GPU, in thousandths of a GPU."""


@dataclass(frozen=True, slots=True)
class Trace:
    """The servers' GPUs (thousandths) and the GPU pods."""

    node_milli: tuple[int, ...]
    pods: tuple[Pod, ...]


def _refused(where: str | Path, problem: str) -> InputError:
    """A trace folder or file refused, said without a front end's words (field 'trace')."""
    accepted = "the csv/ folder of alibaba/clusterdata's cluster-trace-gpu-v2023, with GPU nodes and pods"
    return InputError(field="trace", value=str(where), problem=problem, accepted=accepted)


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError as exc:
        raise _refused(path, f"cannot be read ({(exc.strerror or str(exc)).lower()})") from None


def load_trace(folder: str | Path) -> Trace:
    """The node list and pod list of a cluster-trace-gpu-v2023 folder (the repository's csv/ folder)."""
    root = Path(folder)
    if (root / "csv" / NODES).exists():
        root = root / "csv"
    try:
        nodes = tuple(int(r["gpu"]) * MILLI for r in _rows(root / NODES) if int(r["gpu"]) > 0)
        pods = []
        for r in _rows(root / PODS):
            n = int(r["num_gpu"])
            if n <= 0:
                continue
            milli = n * int(r["gpu_milli"]) if n == 1 else n * MILLI
            sched = float(r["scheduled_time"]) if r["scheduled_time"] else None
            pods.append(Pod(float(r["creation_time"]), sched, float(r["deletion_time"]), milli))
    except InputError:
        raise
    except (KeyError, ValueError) as exc:
        raise _refused(folder, f"is not the cluster-trace-gpu-v2023 format ({exc})") from None
    if not nodes or not pods:
        raise _refused(folder, "has no GPU nodes or no GPU pods")
    return Trace(nodes, tuple(pods))


@dataclass(frozen=True, slots=True, kw_only=True)
class Distribution:
    """Queueing delay in seconds and mean GPU allocation over the trace's span."""

    pods: int
    zero_delay_share: float
    p50_s: float
    p90_s: float
    p99_s: float
    mean_s: float
    allocation: float
    """Mean share of the GPUs allocated, time-weighted over the span."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """The trace as recorded against its replay."""

    recorded: Distribution
    simulated: Distribution
    never_scheduled: int
    nodes: int
    gpus: float


def _distribution(delays: list[float], allocation: float) -> Distribution:
    return Distribution(
        pods=len(delays),
        zero_delay_share=round(sum(1 for d in delays if d <= 0.5) / len(delays), 4),
        p50_s=round(quantile(delays, 0.5), 1),
        p90_s=round(quantile(delays, 0.9), 1),
        p99_s=round(quantile(delays, 0.99), 1),
        mean_s=round(sum(delays) / len(delays), 1),
        allocation=round(allocation, 4),
    )


def replay(trace: Trace) -> Replay:
    """Replay the scheduled pods on the trace's own nodes: each arrives at its creation time and holds its
    GPUs for as long as it held them in the trace; the simulator decides when it starts."""
    ran = [p for p in trace.pods if p.scheduled is not None]
    span = max(p.deleted for p in trace.pods) - min(p.created for p in trace.pods)
    start = min(p.created for p in trace.pods)
    total = sum(trace.node_milli)
    held = sum(p.milli_gpus * (p.deleted - p.scheduled) for p in ran if p.scheduled is not None)
    recorded = _distribution(
        [p.scheduled - p.created for p in ran if p.scheduled is not None], held / (total * span)
    )
    pool = Pool(
        "trace", "trace", max(trace.node_milli), len(trace.node_milli), capacity=list(trace.node_milli)
    )
    specs: dict[int, JobSpec] = {}
    arrivals = []
    for p in ran:
        assert p.scheduled is not None
        spec = specs.setdefault(
            p.milli_gpus, JobSpec(f"pod-{p.milli_gpus}", "trace", 2, "trace", p.milli_gpus, 1.0)
        )
        arrivals.append(((p.created - start) / 3600.0, spec, (p.deleted - p.scheduled) / 3600.0))
    hours = span / 3600.0
    sim = Simulation([pool], [], seed=0, hours=hours + 1e-6, cap=NightCap(), arrivals=arrivals)
    tally = sim.run()
    busy = sum(tally.busy_by_hour["trace"])
    waits = [w * 3600.0 for w in tally.waits[2]]
    return Replay(
        recorded=recorded,
        simulated=_distribution(waits, busy / (total * hours)),
        never_scheduled=len(trace.pods) - len(ran),
        nodes=len(trace.node_milli),
        gpus=total / MILLI,
    )
